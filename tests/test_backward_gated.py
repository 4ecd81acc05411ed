"""Gradients of gated_up, gated_mlp and FusedGatedMLP against float64 torch autograd.

Same rules as tests/test_backward.py: odd and prime shapes, the reference in float64 on the same
(rounded) inputs, the forward's per-dtype relative tolerances. The gated ops have no bias.
"""

import pytest
import torch

import fused_mlp
from fused_mlp.activations import ACTIVATIONS
from benchmarks.harness.references import assert_close
from tests.test_backward import ACTS, DTYPES, assert_gradients_close, gradients, leaves, random, reference_gradients

# (M, K, hidden, dim_out): primes and odd sizes, none a multiple of a block
GATED_SHAPES = [(7, 23, 41, 13), (129, 61, 37, 17)]
NAMES = {"gated_up": ["x", "w_gate", "w_up"], "gated_mlp": ["x", "w_gate", "w_up", "w_down"]}


def gated_inputs(op, M, K, H, D, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    x = random((M, K), dtype, gen)
    w_gate, w_up = random((H, K), dtype, gen, K**-0.5), random((H, K), dtype, gen, K**-0.5)
    if op == "gated_up":
        return leaves(x, w_gate, w_up), random((M, H), dtype, gen)
    return leaves(x, w_gate, w_up, random((D, H), dtype, gen, H**-0.5)), random((M, D), dtype, gen)


def gated_reference(op, activation):
    act = ACTIVATIONS[activation].torch_fn
    up = lambda x, wg, wu: act(x @ wg.T) * (x @ wu.T)  # noqa: E731
    if op == "gated_up":
        return up
    return lambda x, wg, wu, wd: up(x, wg, wu) @ wd.T


def fused(op, activation, recompute=False):
    fn = getattr(fused_mlp, op)
    return lambda *inputs: fn(*inputs, activation, recompute=recompute)


def check_gradients(op, shape, dtype, activation, recompute, device, seed=0):
    inputs, dy = gated_inputs(op, *shape, DTYPES[dtype], seed=seed + sum(shape))
    inputs = leaves(*(t.to(device) for t in inputs))
    _, grads = gradients(fused(op, activation, recompute), inputs, dy.to(device))
    _, ref = reference_gradients(gated_reference(op, activation), inputs, dy)
    assert_gradients_close(grads, ref, DTYPES[dtype], NAMES[op])


@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", ACTS)
def test_gated_gradients(op, activation, dtype, device, poisoned_empty):
    check_gradients(op, GATED_SHAPES[0], dtype, activation, False, device)


@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_gated_gradients_at_a_larger_odd_shape(op, dtype, device, poisoned_empty):
    check_gradients(op, GATED_SHAPES[1], dtype, "silu", False, device)


@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", ["gelu", "silu", "relu"])
def test_gated_recompute_gradients(op, activation, dtype, device, poisoned_empty):
    """recompute=True: only x is saved; G and U come back from one pass over x."""
    check_gradients(op, GATED_SHAPES[0], dtype, activation, True, device, seed=1)


def test_gated_gradient_check_fails_on_the_wrong_derivative(device):
    """The comparison tells SiLU's gradient from tanh-GELU's: it is not one that always passes."""
    inputs, dy = gated_inputs("gated_mlp", 20, 24, 32, 16, torch.float32, seed=3)
    inputs = leaves(*(t.to(device) for t in inputs))
    _, grads = gradients(fused("gated_mlp", "silu"), inputs, dy.to(device))
    _, wrong = reference_gradients(gated_reference("gated_mlp", "gelu_tanh"), inputs, dy)
    with pytest.raises(AssertionError, match="relative error"):
        assert_gradients_close(grads, wrong, torch.float32, NAMES["gated_mlp"])


@pytest.mark.parametrize("op", list(NAMES))
def test_gated_gradients_of_non_contiguous_inputs(op, device):
    """A column slice of x, transposed-storage weights and a transposed upstream gradient."""
    gen = torch.Generator().manual_seed(6)
    M, K, H, D = 31, 27, 35, 19
    x = torch.randn(M, K + 9, generator=gen)[:, 4:4 + K]
    w_gate, w_up = (torch.randn(K, H, generator=gen).t() / K**0.5 for _ in range(2))
    w_down = torch.randn(H, D, generator=gen).t() / H**0.5
    out_features = H if op == "gated_up" else D
    dy = torch.randn(out_features, M, generator=gen).t()
    tensors = (x, w_gate, w_up) if op == "gated_up" else (x, w_gate, w_up, w_down)
    assert not any(t.is_contiguous() for t in (*tensors, dy))
    inputs = [t.to(device).requires_grad_() for t in tensors]
    for recompute in (False, True):
        _, grads = gradients(fused(op, "gelu_tanh", recompute), inputs, dy.to(device))
        _, ref = reference_gradients(gated_reference(op, "gelu_tanh"), inputs, dy)
        assert_gradients_close(grads, ref, torch.float32, NAMES[op])


def test_gated_mlp_leading_dims_and_partial_requires_grad(device):
    """x (2, 5, K); only w_down and w_up require grad: the other gradients are not computed."""
    inputs, _ = gated_inputs("gated_mlp", 10, 17, 21, 9, torch.float32, seed=4)
    x, w_gate, w_up, w_down = (t.detach().to(device) for t in inputs)
    w_up.requires_grad_()
    w_down.requires_grad_()
    x3 = x.reshape(2, 5, 17)
    out = fused_mlp.gated_mlp(x3, w_gate, w_up, w_down, "silu")
    assert out.shape == (2, 5, 9)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(device)
    grads = torch.autograd.grad(out, (w_up, w_down), dy)
    x64, wg64 = x.double(), w_gate.double()
    wu64, wd64 = leaves(w_up.double(), w_down.double())
    ref_out = gated_reference("gated_mlp", "silu")(x64, wg64, wu64, wd64)
    ref = torch.autograd.grad(ref_out, (wu64, wd64), dy.double().reshape(10, 9))
    assert_gradients_close(grads, ref, torch.float32, ["w_up", "w_down"])


@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("where", ["x", "dy"])
def test_gated_nan_propagates_as_in_torch(op, where, dtype, device):
    """A NaN in x or in the upstream gradient reaches the same gradient entries as in torch."""
    inputs, dy = gated_inputs(op, 8, 16, 24, 12, DTYPES[dtype], seed=2)
    if where == "x":
        x = inputs[0].detach().clone()
        x[3, 5] = float("nan")
        inputs[0] = x
    else:
        dy[2, 7] = float("nan")
    inputs = leaves(*(t.to(device) for t in inputs))
    for activation in ("relu", "silu"):
        _, grads = gradients(fused(op, activation), inputs, dy.to(device))
        _, ref = reference_gradients(gated_reference(op, activation), inputs, dy)
        assert any(torch.isnan(r).any() for r in ref), "the case must carry a NaN into a gradient"
        for name, g, r in zip(NAMES[op], grads, ref):
            assert torch.equal(torch.isnan(g), torch.isnan(r).to(g.device)), name


@pytest.mark.parametrize("op", list(NAMES))
def test_gated_inf_in_x_propagates_as_in_torch(op, device):
    inputs, dy = gated_inputs(op, 6, 16, 20, 10, torch.float32, seed=7)
    x = inputs[0].detach().clone()
    x[1, 2] = float("inf")
    inputs = leaves(x.to(device), *(t.to(device) for t in inputs[1:]))
    _, grads = gradients(fused(op, "silu"), inputs, dy.to(device))
    _, ref = reference_gradients(gated_reference(op, "silu"), inputs, dy)
    for name, g, r in zip(NAMES[op], grads, ref):
        assert torch.equal(torch.isnan(g), torch.isnan(r).to(g.device)), name
        assert torch.equal(torch.isinf(g), torch.isinf(r).to(g.device)), name


@pytest.mark.parametrize("op", list(NAMES))
def test_gated_double_backward_raises_a_clear_error(op, device):
    inputs, dy = gated_inputs(op, 5, 8, 6, 4, torch.float32, seed=1)
    inputs = leaves(*(t.to(device) for t in inputs))
    out = fused(op, "silu")(*inputs)
    with pytest.raises(RuntimeError, match=f"fused_mlp.{op}: double backward is not supported"):
        torch.autograd.grad(out, inputs, dy.to(device), create_graph=True)


@pytest.mark.filterwarnings("ignore:Input #:UserWarning")  # float32 on purpose: the kernels' dtype
@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("recompute", [False, True])
def test_gated_gradcheck(op, activation, recompute, device):
    """torch.autograd.gradcheck on small float32 inputs with TF32 off (the IEEE dot)."""
    assert not torch.backends.cuda.matmul.allow_tf32
    inputs, _ = gated_inputs(op, 5, 6, 7, 4, torch.float32, seed=11)
    inputs = leaves(*(t.to(device) for t in inputs))
    assert torch.autograd.gradcheck(fused(op, activation, recompute), inputs, eps=1e-2, atol=1e-2, rtol=1e-2,
                                    fast_mode=True)


def test_gated_forward_only_calls_build_no_graph(device):
    inputs, _ = gated_inputs("gated_mlp", 9, 8, 12, 6, torch.float32, seed=1)
    inputs = leaves(*(t.to(device) for t in inputs))
    with torch.no_grad():
        assert fused_mlp.gated_mlp(*inputs, "silu").grad_fn is None
        assert fused_mlp.gated_up(*inputs[:3], "silu").grad_fn is None
    with torch.inference_mode():
        assert fused_mlp.gated_mlp(*inputs, "silu").grad_fn is None
    assert type(fused_mlp.gated_mlp(*inputs, "silu").grad_fn).__name__ == "_GatedMLPBackward"
    assert type(fused_mlp.gated_up(*inputs[:3], "silu").grad_fn).__name__ == "_GatedUpBackward"


@pytest.mark.parametrize("op", list(NAMES))
def test_gated_recompute_must_be_a_bool(op, device):
    inputs, _ = gated_inputs(op, 2, 3, 4, 2, torch.float32, seed=1)
    with pytest.raises(TypeError, match="recompute must be a bool"):
        getattr(fused_mlp, op)(*inputs, "silu", recompute=1)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_training_forward_of_the_persistent_gated_variant(dtype, device, poisoned_empty):
    """The persistent (TMA) variant stores G and U too (both epilogue halves); the forced config must run."""
    from fused_mlp.ops._gemm_launch import force_config

    inputs, dy = gated_inputs("gated_up", 45, 40, 72, 0, DTYPES[dtype], seed=8)
    inputs = leaves(*(t.to(device) for t in inputs))
    with force_config("persistent") as ran:
        _, grads = gradients(fused("gated_up", "gelu"), inputs, dy.to(device))
    assert ran == ["persistent"]
    _, ref = reference_gradients(gated_reference("gated_up", "gelu"), inputs, dy)
    assert_gradients_close(grads, ref, DTYPES[dtype], NAMES["gated_up"])


class _LlamaMLP(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("recompute", [False, True])
def test_fused_gated_mlp_module_trains_like_its_unfused_form(recompute, dtype, device):
    torch.manual_seed(0)
    unfused = _LlamaMLP(29, 43).to(device, DTYPES[dtype])
    module = fused_mlp.FusedGatedMLP.from_module(unfused)
    module.recompute = recompute
    gen = torch.Generator().manual_seed(1)
    x = random((3, 7, 29), DTYPES[dtype], gen).to(device).requires_grad_()
    dy = random((3, 7, 29), DTYPES[dtype], gen).to(device)
    grads = torch.autograd.grad(module(x), [x, *module.parameters()], dy)
    unfused64 = unfused.double()
    x64 = x.detach().double().requires_grad_()
    ref = torch.autograd.grad(unfused64(x64), [x64, *unfused64.parameters()], dy.double())
    assert_gradients_close(grads, ref, DTYPES[dtype], ["x", "gate_proj", "up_proj", "down_proj"])


@pytest.mark.parametrize("op", list(NAMES))
@pytest.mark.parametrize("recompute", [False, True])
def test_gated_with_no_rows_trains(op, recompute, device, poisoned_empty):
    """M = 0: the weight gradients are zeros (sums over no rows), written by the kernels."""
    inputs, _ = gated_inputs(op, 0, 8, 6, 5, torch.float32, seed=1)
    inputs = leaves(*(t.to(device) for t in inputs))
    out = fused(op, "silu", recompute)(*inputs)
    grads = torch.autograd.grad(out, inputs, torch.zeros_like(out))
    assert grads[0].shape == (0, 8)
    assert all(g.shape == t.shape and torch.all(g == 0) for g, t in zip(grads[1:], inputs[1:]))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("tile", [(64, 64, 32, 3, 4), (128, 128, 64, 3, 8)])
def test_the_dgated_epilogue_at_the_wgmma_tiles_it_is_offered(tile, dtype, device, poisoned_empty):
    """dH = dY @ Wd with dG, dU and H formed in the epilogue, half the tile's columns at a time,
    at the 64-row tiles the split made spill-free (the interpreter's own config is 32x32): the
    column edges fall inside a half and leave a whole half masked (N = 130 = 2 x 64 + 2)."""
    from fused_mlp.activations import get_activation
    from fused_mlp.ops import backward_gemm

    torch_dtype = DTYPES[dtype]
    M, D, H = 70, 45, 130
    gen = torch.Generator().manual_seed(11)
    dy, w_down = random((M, D), torch_dtype, gen), random((D, H), torch_dtype, gen, D**-0.5)
    g, u = random((M, H), torch_dtype, gen), random((M, H), torch_dtype, gen)
    dy, w_down, g, u = (t.to(device) for t in (dy, w_down, g, u))
    dgu = torch.full((M, 2 * H), float("nan"), dtype=torch_dtype, device=device)
    h = torch.full((M, H), float("nan"), dtype=torch_dtype, device=device)
    config = backward_gemm.backward_candidates([tile])[0]
    args = backward_gemm._gemm_args(dy, w_down, dgu[:, :H], e1=g, e2=u, c2=dgu[:, H:], c3=h)
    act = get_activation("gelu")
    constexprs = dict(EPILOGUE=backward_gemm._EPILOGUES["dgated"], TWO_PRODUCTS=False, HAS_BIAS=False,
                      ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad, **backward_gemm._precision(dy))
    backward_gemm._bwd_gemm_kernel.fn[backward_gemm._gemm_grid(M, H)](*args, **constexprs, **config.all_kwargs())

    # the reference: dH rounded to the dtype as the kernel stores it, then float64 autograd of act(G) * U
    dh = (dy.double() @ w_down.double()).to(torch_dtype).double()
    g64, u64 = (t.double().requires_grad_() for t in (g, u))
    h64 = ACTIVATIONS["gelu"].torch_fn(g64) * u64
    dg64, du64 = torch.autograd.grad(h64, (g64, u64), dh.cpu())
    assert_gradients_close((dgu[:, :H], dgu[:, H:]), (dg64, du64), torch_dtype, ["G", "U"])
    assert_close(h, h64.detach(), torch_dtype, "H")
