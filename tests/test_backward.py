"""Gradients of the fused ops against float64 torch autograd, on odd and prime shapes.

The reference runs in float64 on the same (rounded) inputs; errors are judged by the forward's
per-dtype relative tolerances (benchmarks.harness.references.TOLERANCE), never wider.
"""

import pytest
import torch

import fused_mlp
from benchmarks.harness.references import assert_close
from fused_mlp.activations import ACTIVATIONS

ACTS = list(fused_mlp.ACTIVATIONS)
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
LINEAR_SHAPES = [(7, 23, 41), (129, 61, 37)]


def leaves(*tensors):
    return [None if t is None else t.detach().clone().requires_grad_() for t in tensors]


def gradients(fn, inputs, dy):
    """fn(*inputs) and the gradient of every input that requires grad, for upstream gradient dy."""
    out = fn(*inputs)
    grads = torch.autograd.grad(out, [t for t in inputs if t is not None], dy)
    return out, grads


def reference_gradients(fn64, inputs, dy):
    """The same in float64 (inputs and dy converted), for fn64 written with torch ops."""
    inputs64 = leaves(*(None if t is None else t.double() for t in inputs))
    return gradients(fn64, inputs64, dy.double())


def assert_gradients_close(grads, ref_grads, dtype, names):
    for name, g, r in zip(names, grads, ref_grads):
        assert g.dtype == dtype and g.shape == r.shape, (name, g.dtype, g.shape, r.shape)
        assert_close(g, r, dtype, f"d{name}")


def random(shape, dtype, gen, scale=1.0):
    return (torch.randn(shape, generator=gen) * scale).to(dtype)


def linear_act_inputs(M, K, N, dtype, bias, seed):
    gen = torch.Generator().manual_seed(seed)
    x = random((M, K), dtype, gen)
    w = random((N, K), dtype, gen, K**-0.5)
    b = random((N,), dtype, gen) if bias else None
    return leaves(x, w, b), random((M, N), dtype, gen)


def linear_act_reference(activation):
    act = ACTIVATIONS[activation].torch_fn
    return lambda x, w, b=None: act(torch.nn.functional.linear(x, w, b))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", LINEAR_SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_act_gradients(M, K, N, activation, dtype, bias, device, poisoned_empty):
    inputs, dy = linear_act_inputs(M, K, N, DTYPES[dtype], bias, seed=M + K + N)
    inputs = [t if t is None else t.to(device) for t in inputs]
    inputs = leaves(*inputs)
    fn = lambda x, w, b=None: fused_mlp.linear_act(x, w, b, activation)  # noqa: E731
    out, grads = gradients(fn, [t for t in inputs if t is not None], dy.to(device))
    _, ref = reference_gradients(linear_act_reference(activation), [t for t in inputs if t is not None], dy)
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "weight", "bias"])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", ACTS)
def test_linear_act_recompute_gradients(activation, dtype, device, poisoned_empty):
    """recompute=True: only x is saved; Z comes back from the GEMM whose epilogue forms dZ."""
    inputs, dy = linear_act_inputs(33, 29, 19, DTYPES[dtype], True, seed=5)
    inputs = leaves(*(t.to(device) for t in inputs))
    fn = lambda x, w, b: fused_mlp.linear_act(x, w, b, activation, recompute=True)  # noqa: E731
    _, grads = gradients(fn, inputs, dy.to(device))
    _, ref = reference_gradients(linear_act_reference(activation), inputs, dy)
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "weight", "bias"])


def test_linear_act_gradient_check_fails_on_the_wrong_derivative(device):
    """The tolerance is tight enough to tell the erf and tanh GELUs' gradients apart."""
    inputs, dy = linear_act_inputs(40, 24, 32, torch.float32, True, seed=9)
    inputs = leaves(*(t.to(device) * s for t, s in zip(inputs, (3, 1, 1))))
    _, grads = gradients(lambda x, w, b: fused_mlp.linear_act(x, w, b, "gelu"), inputs, dy.to(device))
    _, wrong = reference_gradients(linear_act_reference("gelu_tanh"), inputs, dy)
    with pytest.raises(AssertionError, match="relative error"):
        assert_gradients_close(grads, wrong, torch.float32, ["x", "weight", "bias"])


def test_linear_act_gradients_of_non_contiguous_inputs(device):
    """A column slice of x, a transposed-storage weight, a strided bias and a transposed dy."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(33, 80, generator=gen)[:, 5:45]
    w = torch.randn(40, 29, generator=gen).t() / 40**0.5
    b = torch.randn(29, 3, generator=gen)[:, 1]
    dy = torch.randn(29, 33, generator=gen).t()
    assert not (x.is_contiguous() or w.is_contiguous() or b.is_contiguous() or dy.is_contiguous())
    inputs = leaves(x.to(device), w.to(device), b.to(device))
    for k, t in enumerate((x, w, b)):  # leaves() made contiguous clones: restore the strided layouts
        inputs[k] = t.to(device).requires_grad_()
    for recompute in (False, True):
        fn = lambda x, w, b: fused_mlp.linear_act(x, w, b, "silu", recompute=recompute)  # noqa: E731
        _, grads = gradients(fn, inputs, dy.to(device))
        _, ref = reference_gradients(linear_act_reference("silu"), inputs, dy)
        assert_gradients_close(grads, ref, torch.float32, ["x", "weight", "bias"])


def test_linear_act_leading_dims_and_partial_requires_grad(device):
    """x (2, 3, 5, K); only the weight requires grad: dx is neither computed nor returned."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 5, 19, generator=gen).to(device)
    w, b = leaves(torch.randn(23, 19, generator=gen).to(device) / 19**0.5, torch.randn(23, generator=gen).to(device))
    out = fused_mlp.linear_act(x, w, b, "gelu")
    assert out.shape == (2, 3, 5, 23)
    dy = torch.randn(out.shape, generator=gen).to(device)
    dw, db = torch.autograd.grad(out, (w, b), dy)
    w64, b64 = leaves(w.double(), b.double())
    ref = torch.autograd.grad(linear_act_reference("gelu")(x.double(), w64, b64), (w64, b64), dy.double())
    assert_gradients_close((dw, db), ref, torch.float32, ["weight", "bias"])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("where", ["x", "dy"])
def test_linear_act_nan_propagates_as_in_torch(where, dtype, device):
    """A NaN in x or in the upstream gradient reaches the same gradient entries as in torch."""
    inputs, dy = linear_act_inputs(8, 16, 24, DTYPES[dtype], True, seed=2)
    if where == "x":
        inputs[0] = inputs[0].detach().clone()
        inputs[0][3, 5] = float("nan")
        inputs[0].requires_grad_()
    else:
        dy[2, 7] = float("nan")
    inputs = leaves(*(t.to(device) for t in inputs))
    for activation in ("relu", "gelu_tanh"):
        fn = lambda x, w, b: fused_mlp.linear_act(x, w, b, activation)  # noqa: E731
        _, grads = gradients(fn, inputs, dy.to(device))
        _, ref = reference_gradients(linear_act_reference(activation), inputs, dy)
        assert any(torch.isnan(r).any() for r in ref), "the case must carry a NaN into a gradient"
        for g, r in zip(grads, ref):
            assert torch.equal(torch.isnan(g), torch.isnan(r).to(g.device))


def test_linear_act_double_backward_raises_a_clear_error(device):
    inputs, dy = linear_act_inputs(5, 8, 6, torch.float32, True, seed=1)
    inputs = leaves(*(t.to(device) for t in inputs))
    out = fused_mlp.linear_act(*inputs, "silu")
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad(out, inputs, dy.to(device), create_graph=True)


# Smooth activations only: finite differences straddle relu's kink (its gradient is checked above).
@pytest.mark.filterwarnings("ignore:Input #:UserWarning")  # float32 on purpose: the kernels' dtype
@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("recompute", [False, True])
def test_linear_act_gradcheck(activation, recompute, device):
    """torch.autograd.gradcheck on small float32 inputs (IEEE dot: TF32 off). Finite differences in
    float32 need a loose eps/atol; the float64 comparison above is the tight check."""
    assert not torch.backends.cuda.matmul.allow_tf32
    inputs, _ = linear_act_inputs(6, 5, 7, torch.float32, True, seed=11)
    inputs = leaves(*(t.to(device) for t in inputs))
    fn = lambda x, w, b: fused_mlp.linear_act(x, w, b, activation, recompute=recompute)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-2, atol=1e-2, rtol=1e-2, fast_mode=True)


def test_forward_only_calls_save_nothing(device):
    """no_grad / inference_mode / plain tensors: the inference kernel, no graph, nothing saved."""
    inputs, _ = linear_act_inputs(9, 8, 12, torch.float32, True, seed=1)
    inputs = leaves(*(t.to(device) for t in inputs))
    with torch.no_grad():
        assert fused_mlp.linear_act(*inputs, "gelu").grad_fn is None
    with torch.inference_mode():
        assert fused_mlp.linear_act(*inputs, "gelu").grad_fn is None
    assert fused_mlp.linear_act(*(t.detach() for t in inputs), "gelu").grad_fn is None
    out = fused_mlp.linear_act(*inputs, "gelu")
    assert type(out.grad_fn).__name__ == "_LinearActBackward"


def test_recompute_must_be_a_bool(device):
    x, w = torch.randn(2, 3, device=device), torch.randn(4, 3, device=device)
    with pytest.raises(TypeError, match="recompute must be a bool"):
        fused_mlp.linear_act(x, w, None, "relu", recompute="yes")


def _module_gradients(module, x, dy):
    out = module(x)
    params = [p for p in module.parameters()]
    grads = torch.autograd.grad(out, [x, *params], dy)
    return grads


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("recompute", [False, True])
def test_fused_mlp_module_trains_like_its_unfused_form(recompute, dtype, device):
    """FusedMLP (and the FusedLinear inside the idea) against nn.Sequential in float64: every
    parameter's gradient and x's."""
    torch.manual_seed(0)
    unfused = torch.nn.Sequential(torch.nn.Linear(29, 47), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(47, 13))
    unfused = unfused.to(device, DTYPES[dtype])
    fused = fused_mlp.FusedMLP.from_module(unfused)
    fused.recompute = recompute
    gen = torch.Generator().manual_seed(1)
    x = random((3, 11, 29), DTYPES[dtype], gen).to(device).requires_grad_()
    dy = random((3, 11, 13), DTYPES[dtype], gen).to(device)
    grads = _module_gradients(fused, x, dy)
    ref = _module_gradients(unfused.double(), x.detach().double().requires_grad_(), dy.double())
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"])


def test_fused_linear_module_trains(device):
    torch.manual_seed(2)
    unfused = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.SiLU()).to(device)
    fused = fused_mlp.FusedLinear.from_module(unfused)
    x = torch.randn(17, 24, device=device, requires_grad=True)
    dy = torch.randn(17, 40, device=device)
    grads = _module_gradients(fused, x, dy)
    ref = _module_gradients(unfused.double(), x.detach().double().requires_grad_(), dy.double())
    assert_gradients_close(grads, ref, torch.float32, ["x", "weight", "bias"])


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_training_forward_of_the_persistent_variant(dtype, device, poisoned_empty):
    """The persistent (TMA) variant stores the pre-activation too; the forced config must run."""
    from fused_mlp.ops._gemm_launch import force_config

    inputs, dy = linear_act_inputs(45, 40, 72, DTYPES[dtype], True, seed=8)
    inputs = leaves(*(t.to(device) for t in inputs))
    with force_config("persistent") as ran:
        _, grads = gradients(lambda x, w, b: fused_mlp.linear_act(x, w, b, "gelu"), inputs, dy.to(device))
    assert ran == ["persistent"]
    _, ref = reference_gradients(linear_act_reference("gelu"), inputs, dy)
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "weight", "bias"])
