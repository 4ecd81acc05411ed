"""The FP8 ops (W8A8 and W8A16 forms of linear_act and gated_up / gated_mlp) against a float64
reference computed from the DEQUANTIZED inputs, so the test judges the kernel, not the
quantization; the tolerance is the output dtype's (benchmarks.harness.references.TOLERANCE).
The quantization error itself is measured by tools/fp8_error.py, never folded in here."""

import pytest
import torch
import torch.nn.functional as F

import fused_mlp
from benchmarks.harness.references import assert_close
from fused_mlp.quantize import E4M3_MAX, dequantize_fp8, quantize_fp8
from tests.conftest import DEVICE

ACTS = list(fused_mlp.ACTIVATIONS)
# Odd and prime sizes: no K or N is a multiple of the interpreter's 32-wide blocks, M crosses them.
SHAPES = [(1, 37, 53), (7, 64, 17), (129, 97, 131)]
TORCH_ACT = {"none": lambda t: t, "relu": F.relu, "gelu": F.gelu,
             "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu}


@pytest.fixture(autouse=True)
def _tensors_on_the_test_device():
    """Every tensor a test makes lives on the test device: on a GPU machine the native kernels
    run (the GPU session's native tests), on a CPU one the interpreter."""
    with torch.device(DEVICE):
        yield


def make_x(M, K, form, granularity, seed, dtype=torch.bfloat16, fp8_dtype=torch.float8_e4m3fn):
    """x for the form: (e4m3 x, its scales) for W8A8, (bf16/fp16 x, None) for W8A16; and the
    float64 values the kernel is meant to see."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(M, K, generator=g, device="cpu") * 2).to(DEVICE)
    if form == "w8a16":
        x = x.to(dtype)
        return x, None, x.double()
    q, s = quantize_fp8(x, granularity, fp8_dtype=fp8_dtype)
    return q, s, dequantize_fp8(q, s, torch.float64)


def make_w(N, K, granularity, seed, fp8_dtype=torch.float8_e4m3fn):
    g = torch.Generator().manual_seed(seed)
    q, s = quantize_fp8((torch.randn(N, K, generator=g, device="cpu") / K ** 0.5).to(DEVICE), granularity,
                        fp8_dtype=fp8_dtype)
    return q, s, dequantize_fp8(q, s, torch.float64)


def _runs_e4m3fnuz():
    """e4m3fnuz W8A8 runs under the interpreter and on an MI300; a GPU whose FP8 takes e4m3fn
    refuses it (test_arch tests that refusal)."""
    if torch.device(DEVICE).type == "cuda" and fused_mlp.native_fp8_dtype(DEVICE) != torch.float8_e4m3fnuz:
        pytest.skip(f"this GPU's FP8 takes {fused_mlp.native_fp8_dtype(DEVICE)}")


@pytest.mark.parametrize("form", ["w8a8", "w8a16"])
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", SHAPES)
def test_linear_act_fp8(M, K, N, activation, form, poisoned_empty):
    bias_on = (M + len(activation)) % 2 == 0  # half the cases with a bias, spread over shapes and activations
    x, xs, x64 = make_x(M, K, form, "row", seed=M + K)
    w, ws, w64 = make_w(N, K, "row", seed=N)
    bias = torch.randn(N, dtype=torch.bfloat16) if bias_on else None
    out = fused_mlp.linear_act_fp8(x, w, ws, bias, activation, x_scale=xs)
    ref = TORCH_ACT[activation](x64 @ w64.T + (bias.double() if bias_on else 0))
    assert_close(out, ref, torch.bfloat16, f"{form} {activation} bias={bias_on}")


@pytest.mark.parametrize("x_granularity", ["tensor", "row"])
@pytest.mark.parametrize("w_granularity", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_w8a8_scale_granularities_and_output_dtypes(x_granularity, w_granularity, out_dtype, poisoned_empty):
    """fp32 out holds the kernel to 1e-6: products of e4m3 values are exact in fp32, so only the
    accumulation's and the scaling's rounding remain."""
    M, K, N = 33, 97, 41
    x, xs, x64 = make_x(M, K, "w8a8", x_granularity, seed=1)
    w, ws, w64 = make_w(N, K, w_granularity, seed=2)
    bias = torch.randn(N)
    out = fused_mlp.linear_act_fp8(x, w, ws, bias, "gelu", x_scale=xs, out_dtype=out_dtype)
    assert xs.shape == ((1,) if x_granularity == "tensor" else (M,))
    assert_close(out, F.gelu(x64 @ w64.T + bias.double()), out_dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("w_granularity", ["tensor", "row"])
def test_w8a16_keeps_x_dtype_and_is_exact_in_fp32_out(dtype, w_granularity, poisoned_empty):
    M, K, N = 5, 131, 67
    x, _, x64 = make_x(M, K, "w8a16", None, seed=3, dtype=dtype)
    w, ws, w64 = make_w(N, K, w_granularity, seed=4)
    out = fused_mlp.linear_act_fp8(x, w, ws, None, "silu")
    assert out.dtype == dtype
    assert_close(out, F.silu(x64 @ w64.T), dtype)
    assert_close(fused_mlp.linear_act_fp8(x, w, ws, None, "silu", out_dtype=torch.float32),
                 F.silu(x64 @ w64.T), torch.float32)


def test_leading_batch_dims_and_strided_inputs(poisoned_empty):
    x, xs, x64 = make_x(2 * 3 * 7, 45, "w8a8", "row", seed=5)
    w, ws, w64 = make_w(2 * 29, 45, "row", seed=6)
    w_strided, ws_strided = w[::2], ws[::2]  # every other output channel: a row stride of 2 K
    out = fused_mlp.linear_act_fp8(x.reshape(2, 3, 7, 45), w_strided, ws_strided, None, "relu",
                                   x_scale=xs.reshape(42, 1))
    assert out.shape == (2, 3, 7, 29)
    assert_close(out.reshape(42, 29), F.relu(x64 @ w64[::2].T), torch.bfloat16)


@pytest.mark.parametrize("form", ["w8a8", "w8a16"])
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", SHAPES)
def test_gated_up_fp8(M, K, N, activation, form, poisoned_empty):
    granularity = "tensor" if (M + len(activation)) % 2 else "row"  # both, spread over the cases
    x, xs, x64 = make_x(M, K, form, granularity, seed=M * K)
    wg, gs, wg64 = make_w(N, K, granularity, seed=N)
    wu, us, wu64 = make_w(N, K, granularity, seed=N + 1)
    out = fused_mlp.gated_up_fp8(x, wg, wu, gs, us, activation, x_scale=xs)
    assert_close(out, TORCH_ACT[activation](x64 @ wg64.T) * (x64 @ wu64.T), torch.bfloat16,
                 f"{form} {activation} {granularity}")


@pytest.mark.parametrize("form", ["w8a8", "w8a16"])
@pytest.mark.parametrize("activation", ["gelu_tanh", "silu"])
@pytest.mark.parametrize("M,dim,hidden", [(1, 37, 53), (65, 48, 97)])
def test_gated_mlp_fp8(M, dim, hidden, activation, form, poisoned_empty):
    """Both stages against float64. W8A8's hidden is bf16, then quantized per token: a one-ulp
    bf16 difference in a row's amax re-rounds the whole row in e4m3 (~2^-5 of noise), so the
    down projection is judged on the hidden the gated kernel produced (itself held to the
    float64 reference first), quantized as the contract says."""
    x, xs, x64 = make_x(M, dim, form, "row", seed=M + hidden)
    wg, gs, wg64 = make_w(hidden, dim, "row", seed=7)
    wu, us, wu64 = make_w(hidden, dim, "row", seed=8)
    wd, ds, wd64 = make_w(dim, hidden, "row", seed=9)
    out = fused_mlp.gated_mlp_fp8(x, wg, wu, wd, gs, us, ds, activation, x_scale=xs)
    hidden_out = fused_mlp.gated_up_fp8(x, wg, wu, gs, us, activation, x_scale=xs)
    assert_close(hidden_out, TORCH_ACT[activation](x64 @ wg64.T) * (x64 @ wu64.T), torch.bfloat16, "hidden")
    h64 = dequantize_fp8(*quantize_fp8(hidden_out, "row"), torch.float64) if form == "w8a8" else hidden_out.double()
    assert out.shape == (M, dim) and out.dtype == torch.bfloat16
    assert_close(out, h64 @ wd64.T, torch.bfloat16, f"{form} {activation}")


@pytest.mark.parametrize("activation", ["gelu_tanh", "silu"])
@pytest.mark.parametrize("M,K,N", SHAPES[1:])
def test_w8a8_in_e4m3fnuz_matches_the_reference(M, K, N, activation, poisoned_empty):
    """MI300's encoding: the same kernels on e4m3fnuz x and W (largest 240, one more exponent bias)."""
    _runs_e4m3fnuz()
    fnuz = torch.float8_e4m3fnuz
    x, xs, x64 = make_x(M, K, "w8a8", "row", seed=M + K, fp8_dtype=fnuz)
    w, ws, w64 = make_w(N, K, "row", seed=N, fp8_dtype=fnuz)
    bias = torch.randn(N, dtype=torch.bfloat16)
    out = fused_mlp.linear_act_fp8(x, w, ws, bias, activation, x_scale=xs)
    assert_close(out, TORCH_ACT[activation](x64 @ w64.T + bias.double()), torch.bfloat16, f"fnuz {activation}")
    wg, gs, wg64 = make_w(N, K, "row", seed=N + 1, fp8_dtype=fnuz)
    wd, ds, wd64 = make_w(K, N, "row", seed=N + 2, fp8_dtype=fnuz)
    hidden = fused_mlp.gated_up_fp8(x, wg, w, gs, ws, activation, x_scale=xs)
    assert_close(hidden, TORCH_ACT[activation](x64 @ wg64.T) * (x64 @ w64.T), torch.bfloat16, "fnuz hidden")
    out = fused_mlp.gated_mlp_fp8(x, wg, w, wd, gs, ws, ds, activation, x_scale=xs)
    h64 = dequantize_fp8(*quantize_fp8(hidden, "row", fp8_dtype=fnuz), torch.float64)  # requantized in x's encoding
    assert_close(out, h64 @ wd64.T, torch.bfloat16, "fnuz down projection")


def test_the_two_e4m3_encodings_are_not_mixed():
    x, xs, _ = make_x(4, 32, "w8a8", "row", seed=0, fp8_dtype=torch.float8_e4m3fnuz)
    w, ws, _ = make_w(8, 32, "row", seed=1)
    with pytest.raises(TypeError, match="weight has dtype torch.float8_e4m3fn; expected torch.float8_e4m3fnuz "
                                        r"\(W8A8 takes x and the weights in one e4m3 encoding\)"):
        fused_mlp.linear_act_fp8(x, w, ws, x_scale=xs)
    wz, wzs, _ = make_w(8, 32, "row", seed=1, fp8_dtype=torch.float8_e4m3fnuz)
    with pytest.raises(TypeError, match=r"expected torch.float8_e4m3fn \(W8A16 up-casts e4m3fn bytes\)"):
        fused_mlp.linear_act_fp8(torch.randn(4, 32, dtype=torch.bfloat16), wz, wzs)


def test_empty_batch():
    w, ws, _ = make_w(9, 16, "row", seed=0)
    x = torch.empty(0, 16, dtype=torch.bfloat16)
    assert fused_mlp.linear_act_fp8(x, w, ws).shape == (0, 9)


def _far_apart_columns(storage, offset, values, column_stride):
    """`values` (rows, cols) copied into a column-major view of `storage` whose column stride is
    `column_stride` elements: offsets past 2^31 without allocating them (only the touched pages
    of the lazily committed CPU memory become resident)."""
    view = storage.as_strided(values.shape, (1, column_stride), offset)
    view.copy_(values)
    return view


@pytest.mark.parametrize("form", ["w8a8", "w8a16"])
def test_k_direction_offsets_past_int32(form, device):
    """Column-major x and e4m3 weights whose K stride times k passes 2^31 elements: every offset
    a stride multiplies is int64, so no wrapped (wrong or out-of-bounds) address is read."""
    if device != "cpu":
        pytest.skip("the view trick relies on lazily committed CPU memory")
    stride = 2**30  # k = 2 is element 2^31: past int32
    M, K, N = 4, 3, 5
    x_c, xs, x64 = make_x(M, K, form, "row", seed=11)
    wg_c, gs, wg64 = make_w(N, K, "row", seed=12)
    wu_c, us, wu64 = make_w(N, K, "row", seed=13)
    weights = torch.empty(2 * stride + 64, dtype=torch.float8_e4m3fn)  # 2 GiB virtual, a few pages touched
    wg = _far_apart_columns(weights, 8, wg_c, stride)
    wu = _far_apart_columns(weights, 16, wu_c, stride)
    x_storage = weights if form == "w8a8" else torch.empty(2 * stride + 64, dtype=x_c.dtype)
    x = _far_apart_columns(x_storage, 0, x_c, stride)
    assert x.stride() == wg.stride() == (1, stride) and torch.equal(wg.float(), wg_c.float())
    bias = torch.randn(N, dtype=torch.bfloat16)
    assert_close(fused_mlp.linear_act_fp8(x, wg, gs, bias, "relu", x_scale=xs), F.relu(x64 @ wg64.T + bias.double()),
                 torch.bfloat16, f"linear_act_fp8 {form}")
    assert_close(fused_mlp.gated_up_fp8(x, wg, wu, gs, us, "silu", x_scale=xs), F.silu(x64 @ wg64.T) * (x64 @ wu64.T),
                 torch.bfloat16, f"gated_up_fp8 {form}")
