"""FP8Linear and FP8GatedMLP: from_module quantizes what FusedLinear / FusedGatedMLP take, the
forward is the FP8 op on the module's buffers, state_dicts round-trip (scales checked on load),
and every bad combination is refused with an error naming it."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fused_mlp
from benchmarks.harness.references import assert_close
from fused_mlp import FP8GatedMLP, FP8Linear
from fused_mlp.quantize import dequantize_fp8, quantize_fp8
from tests.conftest import DEVICE


@pytest.fixture(autouse=True)
def _tensors_on_the_test_device():
    """Every tensor a test makes lives on the test device: on a GPU machine the native kernels
    run (the GPU session's native tests), on a CPU one the interpreter."""
    with torch.device(DEVICE):
        yield


def _x(M, K, seed=0, dtype=torch.bfloat16):
    return torch.randn(M, K, generator=torch.Generator().manual_seed(seed), device="cpu").to(DEVICE, dtype)


class LlamaMLP(nn.Module):
    def __init__(self, dim, hidden, bias=False):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=bias)
        self.up_proj = nn.Linear(dim, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, dim, bias=bias)
        self.act_fn = nn.SiLU()


@pytest.mark.parametrize("granularity", ["row", "tensor"])
def test_w8a16_linear_matches_the_dequantized_reference(granularity, poisoned_empty):
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(37, 53), nn.SiLU())
    m = FP8Linear.from_module(seq, fp8="w8a16", weight_granularity=granularity)
    assert m.weight.dtype == torch.float8_e4m3fn and m.activation == "silu" and m.fp8_form == "w8a16"
    assert m.weight_scale.shape == ((53,) if granularity == "row" else (1,))
    q, s = quantize_fp8(seq[0].weight.detach(), granularity)
    assert torch.equal(m.weight.view(torch.uint8), q.view(torch.uint8)) and torch.equal(m.weight_scale, s)
    x = _x(7, 37)
    with torch.no_grad():
        out = m(x)
    assert out.dtype == torch.bfloat16 and out.shape == (7, 53)
    w64 = dequantize_fp8(q, s, torch.float64)
    assert_close(out, F.silu(x.double() @ w64.T + seq[0].bias.double()), torch.bfloat16)


@pytest.mark.parametrize("x_granularity", ["row", "tensor"])
def test_w8a8_linear_quantizes_x_per_call(x_granularity, poisoned_empty):
    """The module's forward is linear_act_fp8 on quantize_fp8(x): the same bits, and x's dtype out."""
    torch.manual_seed(1)
    fused = fused_mlp.FusedLinear(45, 29, activation="gelu")
    m = FP8Linear.from_module(fused, fp8="w8a8", x_granularity=x_granularity)
    assert m.activation == "gelu" and m.x_granularity == x_granularity
    x = _x(2 * 3, 45, seed=2, dtype=torch.float32).reshape(2, 3, 45)
    with torch.no_grad():
        out = m(x)
        xq, xs = quantize_fp8(x, x_granularity)
        direct = fused_mlp.linear_act_fp8(xq, m.weight, m.weight_scale, m.bias, "gelu", x_scale=xs,
                                          out_dtype=torch.float32)
    assert out.dtype == torch.float32 and out.shape == (2, 3, 29)
    assert torch.equal(out, direct)


def test_w8a8_modules_in_e4m3fnuz_quantize_x_into_the_weights_encoding(poisoned_empty):
    """An MI300's modules: the weights in e4m3fnuz (fp8_dtype, or by default on such a GPU), x
    quantized per call into the same encoding."""
    if torch.device(DEVICE).type == "cuda" and fused_mlp.native_fp8_dtype(DEVICE) != torch.float8_e4m3fnuz:
        pytest.skip("this GPU's FP8 takes e4m3fn")
    torch.manual_seed(3)
    fnuz = torch.float8_e4m3fnuz
    m = FP8Linear.from_module(nn.Linear(45, 29), fp8="w8a8", fp8_dtype=fnuz)
    assert m.weight.dtype == fnuz
    x = _x(6, 45, seed=4)
    with torch.no_grad():
        xq, xs = quantize_fp8(x, "row", fp8_dtype=fnuz)
        assert torch.equal(m(x), fused_mlp.linear_act_fp8(xq, m.weight, m.weight_scale, m.bias, "none", x_scale=xs,
                                                          out_dtype=torch.bfloat16))
        gated = FP8GatedMLP.from_module(LlamaMLP(45, 33), fp8="w8a8", fp8_dtype=fnuz)
        assert {p.weight.dtype for p in (gated.gate_proj, gated.up_proj, gated.down_proj)} == {fnuz}
        assert gated(x).shape == (6, 45)


def test_the_weights_encoding_is_checked():
    with pytest.raises(ValueError, match="W8A16 up-casts float8_e4m3fn weights"):
        FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a16", fp8_dtype=torch.float8_e4m3fnuz)
    with pytest.raises(TypeError, match="fp8_dtype=torch.float8_e5m2"):
        FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a8", fp8_dtype=torch.float8_e5m2)
    fnuz = FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a8", fp8_dtype=torch.float8_e4m3fnuz)
    with pytest.raises(TypeError, match="weight must be a 2-D float8_e4m3fn tensor for fp8='w8a16'"):
        FP8Linear(fnuz.weight, fnuz.weight_scale, fp8_form="w8a16")
    fn = FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a8")
    with pytest.raises(ValueError, match="must share one e4m3 encoding"):
        FP8GatedMLP(fnuz, fnuz, fn)


def test_w8a8_is_the_default_x_granularity_row():
    assert FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a8").x_granularity == "row"


def test_state_dict_round_trip_and_bad_scales_refused_on_load():
    src = FP8Linear.from_module(nn.Linear(16, 8), fp8="w8a16")
    assert set(src.state_dict()) == {"weight", "weight_scale", "bias"}
    dst = FP8Linear.from_module(nn.Linear(16, 8), fp8="w8a16")
    dst.load_state_dict(src.state_dict())
    assert torch.equal(dst.weight.view(torch.uint8), src.weight.view(torch.uint8))
    bad = src.state_dict()
    bad["weight_scale"] = bad["weight_scale"].clone()
    bad["weight_scale"][3] = 0.0
    with pytest.raises(ValueError, match="weight_scale holds 0.0"):
        dst.load_state_dict(bad)
    import io

    buffer = io.BytesIO()
    torch.save(src, buffer)  # the whole module, its load hook included
    buffer.seek(0)
    clone = torch.load(buffer, weights_only=False)
    assert torch.equal(clone.weight_scale, src.weight_scale)
    with pytest.raises(ValueError, match="weight_scale holds 0.0"):
        clone.load_state_dict(bad)


@pytest.mark.parametrize("form", ["w8a16", "w8a8"])
def test_gated_mlp_module_is_gated_mlp_fp8_on_its_buffers(form, poisoned_empty):
    torch.manual_seed(3)
    llama = LlamaMLP(48, 97)
    m = FP8GatedMLP.from_module(llama, fp8=form)
    assert m.activation == "silu" and m.gate_proj.weight.dtype == torch.float8_e4m3fn
    assert {"gate_proj.weight", "gate_proj.weight_scale", "down_proj.weight_scale"} <= set(m.state_dict())
    x = _x(5, 48, seed=4)
    with torch.no_grad():
        out = m(x)
        xq, xs = quantize_fp8(x, "row") if form == "w8a8" else (x, None)
        g, u, d = m.gate_proj, m.up_proj, m.down_proj
        direct = fused_mlp.gated_mlp_fp8(xq, g.weight, u.weight, d.weight, g.weight_scale, u.weight_scale,
                                         d.weight_scale, "silu", x_scale=xs)
    assert out.dtype == torch.bfloat16 and torch.equal(out, direct)
    if form == "w8a16":  # the hidden stays bf16: the whole MLP is within bf16's tolerance of float64
        w = {n: dequantize_fp8(*quantize_fp8(getattr(llama, n).weight.detach(), "row"), torch.float64)
             for n in ("gate_proj", "up_proj", "down_proj")}
        x64 = x.double()
        ref = (F.silu(x64 @ w["gate_proj"].T) * (x64 @ w["up_proj"].T)) @ w["down_proj"].T
        assert_close(out, ref, torch.bfloat16)


@pytest.mark.parametrize("call,error,match", [
    (lambda: FP8Linear.from_module(nn.Linear(8, 4), fp8="w4a16"), ValueError, "fp8='w4a16' is not supported"),
    (lambda: FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a16", x_granularity="row"), ValueError,
     "x_granularity is for fp8='w8a8' only"),
    (lambda: FP8Linear.from_module(nn.Linear(8, 4), fp8="w8a8", x_granularity="col"), ValueError,
     "x_granularity='col'"),
    (lambda: FP8Linear.from_module(nn.Linear(8, 4), weight_granularity="block"), ValueError,
     "weight_granularity='block'"),
    (lambda: FP8Linear.from_module(nn.Conv1d(8, 4, 1)), TypeError, "expects an nn.Sequential"),
    (lambda: FP8Linear(torch.zeros(4, 8), torch.ones(4)), TypeError, "weight must be a 2-D float8_e4m3fn"),
    (lambda: FP8Linear(torch.zeros(4, 8).to(torch.float8_e4m3fn), torch.ones(3)), ValueError,
     r"weight_scale has shape \(3,\)"),
    (lambda: FP8Linear(torch.zeros(4, 8).to(torch.float8_e4m3fn), torch.ones(4), torch.ones(5)), ValueError, "bias"),
    (lambda: FP8GatedMLP.from_module(LlamaMLP(8, 16, bias=True)), ValueError, "has a bias"),
    (lambda: FP8GatedMLP.from_module(LlamaMLP(8, 16), activation="gelu_tanh"), ValueError, "disagrees"),
    (lambda: FP8GatedMLP(*(FP8Linear.from_module(nn.Linear(8, 8, bias=False), fp8=f) for f in ("w8a8", "w8a16", "w8a16"))),
     ValueError, "share one fp8 form"),
])
def test_bad_combinations_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_non_finite_weight_is_refused_naming_it():
    lin = nn.Linear(8, 4)
    with torch.no_grad():
        lin.weight[1, 2] = float("inf")
    with pytest.raises(ValueError, match="weight holds NaN or Inf"):
        FP8Linear.from_module(lin)
    llama = LlamaMLP(8, 16)
    with torch.no_grad():
        llama.up_proj.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="up_proj.weight holds NaN or Inf"):
        FP8GatedMLP.from_module(llama)


@pytest.mark.parametrize("form,dtype,match", [
    ("w8a16", torch.float32, r"FP8Linear\(fp8='w8a16'\) takes bfloat16 or float16 x, got torch.float32"),
    ("w8a8", torch.float8_e4m3fn, r"FP8Linear\(fp8='w8a8'\) takes bfloat16, float16 or float32 x"),
])
def test_forward_refuses_an_x_dtype_the_form_does_not_take(form, dtype, match):
    m = FP8Linear.from_module(nn.Linear(8, 4), fp8=form)
    with pytest.raises(TypeError, match=match):
        m(torch.zeros(2, 8).to(dtype))
