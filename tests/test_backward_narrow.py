"""Gradients of narrow_mlp, narrow_mlp_packed and FusedNarrowMLP against float64 torch autograd.

float16 and bfloat16 run the fused backward (the on-chip dZ kernel and the split-buffer weight
gradients); float32 runs linear_act per layer, whose backward carries the gradients. Same rules as
tests/test_backward.py: odd widths, the float64 reference on the same rounded inputs, the
forward's per-dtype tolerances.
"""

import pytest
import torch

import fused_mlp
from fused_mlp.activations import ACTIVATIONS
from fused_mlp.ops import narrow_mlp_backward
from tests.test_backward import ACTS, DTYPES, assert_gradients_close, gradients, leaves, random

# (in, hidden..., out): none a power of two; the second pads to the 128-wide kernel
WIDTHS = [(13, 37, 29, 7), (9, 100, 3)]
M_ROWS = 37


def narrow_inputs(widths, dtype, bias, seed, M=M_ROWS):
    gen = torch.Generator().manual_seed(seed)
    x = random((M, widths[0]), dtype, gen)
    weights = [random((o, i), dtype, gen, i**-0.5) for i, o in zip(widths[:-1], widths[1:])]
    biases = [random((o,), dtype, gen) for o in widths[1:]] if bias else None
    return x, weights, biases, random((M, widths[-1]), dtype, gen)


def narrow_reference(x, weights, biases, activation, output_activation, rounding=None):
    """The MLP in x's dtype (float64 for the reference). `rounding`: the dtype the fused MLP rounds
    each hidden activation to; the float64 reference rounds its forward there too (a straight-through
    rounding, identity in the backward), so that both see the same relu kinks: rounding moves
    pre-activations near 0 across it, which an unrounded reference would count as gradient error
    (eager float16 differs from an unrounded float64 reference by 1.5e-2 at relu, measured)."""
    h = x
    for i, w in enumerate(weights):
        h = torch.nn.functional.linear(h, w, None if biases is None else biases[i])
        h = ACTIVATIONS[activation if i < len(weights) - 1 else (output_activation or "none")].torch_fn(h)
        if rounding is not None and i < len(weights) - 1:
            h = h + (h.to(rounding).to(h.dtype) - h).detach()
    return h


def check(widths, dtype, activation, output_activation, bias, device, seed=0, M=M_ROWS):
    x, weights, biases, dy = narrow_inputs(widths, DTYPES[dtype], bias, seed + sum(widths), M)
    layers = len(weights)
    flat = leaves(x, *weights, *(biases or []))
    flat = [t.to(device).detach().requires_grad_() for t in flat]

    def split(ts):
        return ts[0], list(ts[1:1 + layers]), (list(ts[1 + layers:]) if bias else None)

    def fused(*ts):
        return fused_mlp.narrow_mlp(*split(ts), activation, output_activation)

    def reference(*ts):
        return narrow_reference(*split(ts), activation, output_activation, DTYPES[dtype])

    _, grads = gradients(fused, flat, dy.to(device))
    flat64 = leaves(*(t.detach().cpu().double() for t in flat))
    _, ref = gradients(reference, flat64, dy.double())
    names = ["x"] + [f"weights[{i}]" for i in range(layers)] + ([f"biases[{i}]" for i in range(layers)] if bias else [])
    assert_gradients_close(grads, ref, DTYPES[dtype], names)
    return grads


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", ACTS)
def test_narrow_mlp_gradients(activation, dtype, device, poisoned_empty):
    check(WIDTHS[0], dtype, activation, None, True, device)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("output_activation", ["silu", "gelu"])
def test_narrow_mlp_gradients_with_an_output_activation_and_no_bias(output_activation, dtype, device, poisoned_empty):
    """The last layer's pre-activation is saved only here (an output activation needs it)."""
    check(WIDTHS[0], dtype, "relu", output_activation, False, device, seed=1)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_narrow_mlp_gradients_at_width_128(dtype, device, poisoned_empty):
    check(WIDTHS[1], dtype, "gelu_tanh", None, True, device, seed=2)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_one_layer_without_an_output_activation_saves_nothing_but_x(dtype, device, poisoned_empty):
    check((11, 19), dtype, "relu", None, True, device, seed=3)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_weight_gradients_sum_several_row_blocks_per_split_deterministically(dtype, device, monkeypatch):
    """With fewer splits than row blocks each program sums several; two runs agree bit for bit."""
    monkeypatch.setattr(narrow_mlp_backward, "MAX_SPLITS", 3)
    first = check(WIDTHS[0], dtype, "silu", None, True, device, seed=4, M=229)
    second = check(WIDTHS[0], dtype, "silu", None, True, device, seed=4, M=229)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_narrow_mlp_packed_gradients_reach_the_packed_buffers(device):
    """Called on packed buffers that require grad, the gradients land there (padding gets zeros)."""
    x, weights, biases, dy = narrow_inputs(WIDTHS[0], torch.float16, True, seed=5)
    packed = fused_mlp.pack_layers([w.to(device) for w in weights], [b.to(device) for b in biases])
    pw, pb = packed.weights.requires_grad_(), packed.biases.requires_grad_()
    x = x.to(device).requires_grad_()
    out = fused_mlp.narrow_mlp_packed(x, packed, "gelu")
    dx, dpw, dpb = torch.autograd.grad(out, (x, pw, pb), dy.to(device))
    w64 = [w.double().requires_grad_() for w in weights]
    b64 = [b.double().requires_grad_() for b in biases]
    x64 = x.detach().cpu().double().requires_grad_()
    ref = torch.autograd.grad(narrow_reference(x64, w64, b64, "gelu", None), (x64, *w64, *b64), dy.double())
    got = [dx] + [dpw[i, :o, :n] for i, (n, o) in enumerate(zip(WIDTHS[0][:-1], WIDTHS[0][1:]))]
    got += [dpb[i, :o] for i, o in enumerate(WIDTHS[0][1:])]
    assert_gradients_close(got, ref, torch.float16, ["x", "w0", "w1", "w2", "b0", "b1", "b2"])
    padding = torch.ones_like(dpw, dtype=torch.bool)
    for i, (n, o) in enumerate(zip(WIDTHS[0][:-1], WIDTHS[0][1:])):
        padding[i, :o, :n] = False
    assert torch.all(dpw[padding] == 0)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_narrow_mlp_gradients_of_non_contiguous_inputs(dtype, device):
    """A column slice of x with leading dims, and a transposed upstream gradient."""
    gen = torch.Generator().manual_seed(6)
    dt = DTYPES[dtype]
    x = random((2, 15, 30), dt, gen)[..., 3:16].to(device).requires_grad_()
    weights = [random((o, i), dt, gen, i**-0.5).to(device).requires_grad_() for i, o in [(13, 33), (33, 6)]]
    dy = random((6, 30), dt, gen).t().reshape(2, 15, 6).to(device)
    assert not x.is_contiguous() and not dy.is_contiguous()
    out = fused_mlp.narrow_mlp(x, weights, None, "silu")
    grads = torch.autograd.grad(out, (x, *weights), dy)
    x64, w64 = x.detach().cpu().double().requires_grad_(), [w.detach().cpu().double().requires_grad_() for w in weights]
    ref = torch.autograd.grad(narrow_reference(x64, w64, None, "silu", None), (x64, *w64), dy.cpu().double())
    assert_gradients_close(grads, ref, dt, ["x", "w0", "w1"])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("where", ["x", "dy"])
def test_narrow_mlp_nan_propagates_as_in_torch(where, dtype, device):
    x, weights, biases, dy = narrow_inputs((8, 24, 16, 5), DTYPES[dtype], True, seed=2, M=9)
    if where == "x":
        x[3, 5] = float("nan")
    else:
        dy[2, 3] = float("nan")
    for activation in ("relu", "silu"):
        flat = [t.to(device).requires_grad_() for t in (x, *weights, *biases)]
        out = fused_mlp.narrow_mlp(flat[0], flat[1:4], flat[4:], activation)
        grads = torch.autograd.grad(out, flat, dy.to(device))
        flat64 = [t.detach().cpu().double().requires_grad_() for t in flat]
        ref = torch.autograd.grad(narrow_reference(flat64[0], flat64[1:4], flat64[4:], activation, None), flat64,
                                  dy.double())
        assert any(torch.isnan(r).any() for r in ref), "the case must carry a NaN into a gradient"
        for k, (g, r) in enumerate(zip(grads, ref)):
            assert torch.equal(torch.isnan(g), torch.isnan(r).to(g.device)), k


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_narrow_mlp_inf_in_x_propagates_as_in_torch(dtype, device):
    x, weights, biases, dy = narrow_inputs((8, 24, 5), DTYPES[dtype], True, seed=3, M=6)
    x[1, 2] = float("inf")
    flat = [t.to(device).requires_grad_() for t in (x, *weights, *biases)]
    grads = torch.autograd.grad(fused_mlp.narrow_mlp(flat[0], flat[1:3], flat[3:], "silu"), flat, dy.to(device))
    flat64 = [t.detach().cpu().double().requires_grad_() for t in flat]
    ref = torch.autograd.grad(narrow_reference(flat64[0], flat64[1:3], flat64[3:], "silu", None), flat64, dy.double())
    for k, (g, r) in enumerate(zip(grads, ref)):
        assert torch.equal(torch.isnan(g), torch.isnan(r).to(g.device)), k
        assert torch.equal(torch.isinf(g), torch.isinf(r).to(g.device)), k


def test_narrow_mlp_double_backward_raises_a_clear_error(device):
    x, weights, biases, dy = narrow_inputs((8, 16, 4), torch.float16, True, seed=1, M=5)
    flat = [t.to(device).requires_grad_() for t in (x, *weights, *biases)]
    out = fused_mlp.narrow_mlp(flat[0], flat[1:3], flat[3:], "silu")
    with pytest.raises(RuntimeError, match="fused_mlp.narrow_mlp: double backward is not supported"):
        torch.autograd.grad(out, flat, dy.to(device), create_graph=True)


@pytest.mark.filterwarnings("ignore:Input #:UserWarning")  # float32 on purpose: the kernels' dtype
@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_narrow_mlp_gradcheck(activation, device):
    """gradcheck on small float32 inputs, TF32 off (float32 runs linear_act per layer; the 16-bit
    fused backward is checked against float64 above, finite differences in fp16 being noise)."""
    assert not torch.backends.cuda.matmul.allow_tf32
    x, weights, biases, _ = narrow_inputs((4, 6, 3), torch.float32, True, seed=11, M=5)
    flat = [t.to(device).requires_grad_() for t in (x, *weights, *biases)]
    fn = lambda *ts: fused_mlp.narrow_mlp(ts[0], ts[1:3], ts[3:], activation)  # noqa: E731
    assert torch.autograd.gradcheck(fn, flat, eps=1e-2, atol=1e-2, rtol=1e-2, fast_mode=True)


def test_narrow_mlp_with_no_rows_trains(device):
    x, weights, biases, _ = narrow_inputs((8, 16, 4), torch.float16, True, seed=1, M=0)
    flat = [t.to(device).requires_grad_() for t in (x, *weights, *biases)]
    out = fused_mlp.narrow_mlp(flat[0], flat[1:3], flat[3:], "relu")
    grads = torch.autograd.grad(out, flat, torch.zeros_like(out))
    assert grads[0].shape == (0, 8) and all(torch.all(g == 0) for g in grads[1:])


def test_narrow_forward_only_calls_build_no_graph(device):
    x, weights, biases, _ = narrow_inputs((8, 16, 4), torch.float16, True, seed=1, M=5)
    weights = [w.to(device).requires_grad_() for w in weights]
    with torch.inference_mode():
        assert fused_mlp.narrow_mlp(x.to(device), weights, None, "relu").grad_fn is None
    out = fused_mlp.narrow_mlp(x.to(device), weights, None, "relu")
    assert out.requires_grad


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_fused_narrow_mlp_module_trains_like_its_unfused_form(dtype, device):
    torch.manual_seed(0)
    unfused = torch.nn.Sequential(torch.nn.Linear(11, 45), torch.nn.SiLU(), torch.nn.Linear(45, 27), torch.nn.SiLU(),
                                  torch.nn.Linear(27, 6)).to(device, DTYPES[dtype])
    module = fused_mlp.FusedNarrowMLP.from_module(unfused)
    gen = torch.Generator().manual_seed(1)
    x = random((3, 13, 11), DTYPES[dtype], gen).to(device).requires_grad_()
    dy = random((3, 13, 6), DTYPES[dtype], gen).to(device)
    grads = torch.autograd.grad(module(x), [x, *module.parameters()], dy)
    unfused64 = unfused.double()
    x64 = x.detach().double().requires_grad_()
    ref = torch.autograd.grad(unfused64(x64), [x64, *unfused64.parameters()], dy.double())
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "w0", "b0", "w1", "b1", "w2", "b2"])
