"""Float64 references and the one closeness check that tests, benchmarks and tools/gpu_check.py use.

The reference follows each op's contract: where the op stores an intermediate in the input
dtype (gated_mlp's hidden activations, narrow_mlp's output of every layer), the reference rounds
to that dtype at the same point, and computes everything else in float64.
"""

import torch

from .activations import ACTIVATIONS

# Relative error ||out - ref|| / ||ref||, per dtype: about a few units of rounding of the output
# dtype (fp32 with IEEE dot; fp16 2^-11; bf16 2^-8).
TOLERANCE = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double().to(out.device)
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def mismatch(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> str | None:
    """Why `out` is not an acceptable result for reference `ref`, or None when it is."""
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != dtype:
        return f"dtype {out.dtype}, expected {dtype}"
    if torch.isnan(out).any():
        return "NaN in the output (an element left unwritten?)"
    err = rel_error(out, ref)
    if not err <= TOLERANCE[dtype]:
        return f"relative error {err:.3e} > {TOLERANCE[dtype]:.0e} for {dtype}"
    return None


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "output"):
    problem = mismatch(out, ref, dtype)
    if problem is not None:
        raise AssertionError(f"{what}: {problem}")


def _act(name, t):
    return ACTIVATIONS[name].torch_fn(t)


def _d(t):
    # float64 on the tensor's own device: the CPU in tests, the GPU for tools/gpu_check.py's real sizes
    return None if t is None else t.detach().double()


def _round(t64, dtype):
    return t64.to(dtype).double()


def ref_linear_act(x, weight, bias=None, activation="gelu_tanh"):
    y = _d(x) @ _d(weight).T
    if bias is not None:
        y = y + _d(bias)
    return _act(activation, y)


def ref_gated_up(x, w_gate, w_up, activation="gelu_tanh"):
    return _act(activation, _d(x) @ _d(w_gate).T) * (_d(x) @ _d(w_up).T)


def ref_gated_mlp(x, w_gate, w_up, w_down, activation="gelu_tanh"):
    hidden = _round(ref_gated_up(x, w_gate, w_up, activation), x.dtype)
    return hidden @ _d(w_down).T


def ref_narrow_mlp(x, weights, biases=None, activation="relu", output_activation=None):
    biases = biases if biases is not None else [None] * len(weights)
    h = _d(x)
    for i, (w, b) in enumerate(zip(weights, biases)):
        h = h @ _d(w).T + (0 if b is None else _d(b))
        h = _act(activation, h) if i < len(weights) - 1 else _act(output_activation or "none", h)
        if i < len(weights) - 1:
            h = _round(h, x.dtype)
    return h


REFERENCES = {
    "linear_act": ref_linear_act,
    "gated_up": ref_gated_up,
    "gated_mlp": ref_gated_mlp,
    "narrow_mlp": ref_narrow_mlp,
}
