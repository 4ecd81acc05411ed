"""Every op x activation x dtype against a float64 reference, on odd shapes, with poisoned outputs."""

import pytest
import torch

import fused_mlp
from benchmarks.harness import implementations
from benchmarks.harness.ops import OPS, output_features
from benchmarks.harness.references import assert_close, reference
from benchmarks.harness.tensors import make_inputs, torch_dtype
from workload.case import DTYPES, Case

ACTS = list(fused_mlp.ACTIVATIONS)
DTYPE_NAMES = list(DTYPES)
# Odd and prime sizes: no K or N is a multiple of any block size, M crosses block boundaries.
LINEAR_SHAPES = [(1, 37, 53), (7, 64, 17), (129, 97, 131)]
GATED_SHAPES = [(1, 37, 53), (7, 23, 67), (129, 61, 41)]
NARROW_WIDTHS = [(3, 64, 64, 7), (37, 128, 128, 128, 5), (16, 17, 16)]


def run_case(case: Case, device, seed=0):
    inputs = make_inputs(case, device, seed)
    out = getattr(fused_mlp, case.op)(**inputs)
    assert_close(out, reference(case, inputs), torch_dtype(case), case.key)
    return out


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", LINEAR_SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_act(M, K, N, activation, dtype, bias, device, poisoned_empty):
    run_case(Case("linear_act", M, K, N, dtype, activation, bias), device, seed=M * K + N)


@pytest.mark.parametrize("op", ["gated_up", "gated_mlp"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", GATED_SHAPES)
def test_gated(op, M, K, N, activation, dtype, device, poisoned_empty):
    run_case(Case(op, M, K, N, dtype, activation), device, seed=M + K * N)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("widths", NARROW_WIDTHS)
@pytest.mark.parametrize("M", [1, 7, 129])
def test_narrow_mlp(M, widths, activation, dtype, device, poisoned_empty):
    run_case(Case.from_widths("narrow_mlp", M, widths, dtype, activation), device, seed=M + sum(widths))


@pytest.mark.parametrize("output_activation", ACTS)
def test_narrow_mlp_output_activation(output_activation, device, poisoned_empty):
    case = Case.from_widths("narrow_mlp", 33, (5, 32, 9), "fp32", "silu")
    inputs = {**make_inputs(case, device), "output_activation": output_activation}
    assert_close(fused_mlp.narrow_mlp(**inputs), OPS["narrow_mlp"].reference(**inputs), torch.float32)


def test_narrow_mlp_some_layers_without_bias(device, poisoned_empty):
    inputs = make_inputs(Case.from_widths("narrow_mlp", 40, (8, 48, 48, 4), "fp16", "gelu"), device)
    inputs["biases"][1] = None
    assert_close(fused_mlp.narrow_mlp(**inputs), OPS["narrow_mlp"].reference(**inputs), torch.float16)


@pytest.mark.parametrize("op", ["linear_act", "gated_up", "gated_mlp"])
def test_leading_batch_dims(op, device, poisoned_empty):
    inputs = make_inputs(Case(op, 2 * 3 * 5, 19, 23, "fp16", "silu"), device)
    inputs["x"] = inputs["x"].reshape(2, 3, 5, 19)
    out = getattr(fused_mlp, op)(**inputs)
    ref = OPS[op].reference(**inputs)
    assert out.shape == ref.shape == (2, 3, 5, 23 if op != "gated_mlp" else 19)
    assert_close(out, ref, torch.float16)


def test_narrow_leading_batch_dims(device, poisoned_empty):
    inputs = make_inputs(Case.from_widths("narrow_mlp", 4 * 9, (6, 32, 3), "fp32", "relu"), device)
    inputs["x"] = inputs["x"].reshape(4, 9, 6)
    out = fused_mlp.narrow_mlp(**inputs)
    assert out.shape == (4, 9, 3)
    assert_close(out, OPS["narrow_mlp"].reference(**inputs), torch.float32)


def test_non_contiguous_inputs(device, poisoned_empty):
    """Strided x (a column slice) and a transposed-storage weight go through the kernels' strides."""
    base = torch.randn(33, 80, device=device)
    x = base[:, 5:45]  # row stride 80, not 40
    weight = torch.randn(40, 29, device=device).t()  # (29, 40) with strides (1, 29)
    assert not x.is_contiguous() and not weight.is_contiguous()
    bias = torch.randn(29, 3, device=device)[:, 1]  # a strided view: stride 3
    out = fused_mlp.linear_act(x, weight, bias, "relu")
    assert_close(out, OPS["linear_act"].reference(x, weight, bias, "relu"), torch.float32)
    w_up = torch.randn(40, 29, device=device).t()
    out = fused_mlp.gated_up(x, weight, w_up, "silu")
    assert_close(out, OPS["gated_up"].reference(x, weight, w_up, "silu"), torch.float32)
    layers = [weight, torch.randn(7, 29, device=device)]
    out = fused_mlp.narrow_mlp(x, layers, None, "relu")
    assert_close(out, OPS["narrow_mlp"].reference(x, layers, None, "relu"), torch.float32)


@pytest.mark.parametrize("op", ["linear_act", "gated_up", "gated_mlp", "narrow_mlp"])
def test_empty_batch_returns_empty(op, device):
    if op == "narrow_mlp":
        case = Case.from_widths(op, 0, (8, 16, 4), "fp16")
    else:
        case = Case(op, 0, 8, 16, "fp16", "relu")
    inputs = make_inputs(case, device)
    inputs["x"] = inputs["x"].reshape(2, 0, 8)
    out = getattr(fused_mlp, op)(**inputs)
    assert out.shape == (2, 0, output_features(case)) and out.dtype == torch.float16


def test_fp32_tolerance_tells_gelu_variants_apart(device):
    """The fp32 check is tight enough to fail on the wrong GELU (erf vs tanh)."""
    inputs = make_inputs(Case("linear_act", 64, 32, 48, "fp32", "gelu"), device)
    inputs["x"] = inputs["x"] * 3  # push pre-activations to where the two GELUs differ
    out = fused_mlp.linear_act(**inputs)
    wrong = OPS["linear_act"].reference(**{**inputs, "activation": "gelu_tanh"})
    with pytest.raises(AssertionError, match="relative error"):
        assert_close(out, wrong, torch.float32)


def test_poisoning_catches_unwritten_elements(device, poisoned_empty):
    out = torch.empty(4, 4, device=device)
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(out, torch.ones(4, 4, dtype=torch.float64), torch.float32)


def test_narrow_mlp_sees_every_weight_change(device):
    """Writes through .data or numpy bump no version counter: narrow_mlp must still see them."""
    inputs = make_inputs(Case.from_widths("narrow_mlp", 50, (8, 32, 32, 4), "fp32", "relu"), device)
    fused_mlp.narrow_mlp(**inputs)
    inputs["weights"][1].data.mul_(-2)
    assert_close(fused_mlp.narrow_mlp(**inputs), OPS["narrow_mlp"].reference(**inputs), torch.float32)
    if device == "cpu":
        inputs["weights"][0].numpy()[:] *= 3
        assert_close(fused_mlp.narrow_mlp(**inputs), OPS["narrow_mlp"].reference(**inputs), torch.float32)


def test_prepared_fused_narrow_mlp_packs_once(device, monkeypatch):
    calls = []
    real_pack = fused_mlp.pack_layers
    monkeypatch.setattr(fused_mlp, "pack_layers", lambda *a: calls.append(1) or real_pack(*a))
    case = Case.from_widths("narrow_mlp", 20, (8, 16, 4), "fp16", "relu")
    inputs = make_inputs(case, device)
    call = implementations.prepare(case, "fused", inputs)
    outs = [call() for _ in range(3)]
    assert len(calls) == 1
    assert_close(outs[-1], OPS["narrow_mlp"].reference(**inputs), torch.float16)


def test_narrow_mlp_packed_checks_what_it_is_given(device):
    from fused_mlp import PackedMLP, narrow_mlp_packed, pack_layers

    inputs = make_inputs(Case.from_widths("narrow_mlp", 4, (8, 16, 4), "fp16", "relu"), device)
    packed = pack_layers(inputs["weights"], inputs["biases"])
    assert packed.widths == (8, 16, 4)
    with pytest.raises(ValueError, match="last dim must be the MLP's in_features = 8"):
        narrow_mlp_packed(torch.randn(4, 200, device=device, dtype=torch.float16), packed)
    with pytest.raises(ValueError, match=r"packed.biases has shape \(2, 15\)"):
        narrow_mlp_packed(inputs["x"], packed._replace(biases=packed.biases[:, :15]))
    with pytest.raises(TypeError, match="PackedMLP that pack_layers returns"):
        narrow_mlp_packed(inputs["x"], (packed.weights, packed.biases))
    # weights with the right shape but not the layout pack_layers makes: refused, not misread
    transposed = packed.weights.transpose(1, 2).contiguous().transpose(1, 2)
    assert transposed.shape == packed.weights.shape and not transposed.is_contiguous()
    with pytest.raises(ValueError, match="packed.weights is not contiguous"):
        narrow_mlp_packed(inputs["x"], packed._replace(weights=transposed))
    assert isinstance(packed, PackedMLP)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ["relu", "gelu_tanh"])
def test_nan_in_gives_nan_out_as_in_torch(dtype, activation, device):
    """relu must not turn a NaN into 0 (tl.maximum drops NaN by default): a blow-up stays visible."""
    inputs = make_inputs(Case("linear_act", 8, 16, 24, dtype, activation, bias=True), device)
    inputs["x"][3, 5] = float("nan")
    out = fused_mlp.linear_act(**inputs)
    ref = OPS["linear_act"].reference(**inputs)
    assert torch.isnan(ref[3]).all() and torch.isnan(out[3]).all()
    assert not torch.isnan(out[[0, 1, 2, 4, 5, 6, 7]]).any()
    narrow = make_inputs(Case.from_widths("narrow_mlp", 6, (8, 32, 32, 4), dtype, activation), device)
    narrow["x"][2, 1] = float("nan")
    assert torch.isnan(fused_mlp.narrow_mlp(**narrow)[2]).all()
    assert not torch.isnan(fused_mlp.narrow_mlp(**narrow)[[0, 1, 3, 4, 5]]).any()


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_narrow_mlp_keeps_an_infinity_where_torch_does(dtype, device):
    """An Inf times a padding zero is NaN; the padded lanes must not carry it into real ones."""
    case = Case.from_widths("narrow_mlp", 5, (6, 20, 3), dtype, "relu", bias=False)
    inputs = make_inputs(case, device)
    inputs["weights"] = [w.abs() for w in inputs["weights"]]  # positive: the Inf reaches the output as Inf
    inputs["x"][1, 0] = float("inf")
    out = fused_mlp.narrow_mlp(**inputs)
    ref = OPS["narrow_mlp"].reference(**inputs)
    assert torch.equal(torch.isnan(out), torch.isnan(ref)) and torch.equal(torch.isinf(out), torch.isinf(ref))
    assert torch.isinf(ref).any(), "the case must carry an Inf through"
    finite = torch.isfinite(ref)
    assert_close(out[finite], ref[finite], torch_dtype(case))


@pytest.mark.parametrize("op", ["linear_act", "gated_up", "gated_mlp"])
def test_zero_input_features_give_what_torch_gives(op, device, poisoned_empty):
    """K = 0: an empty sum is 0, so the output is act(bias) (or act(0) * 0), as torch computes."""
    inputs = make_inputs(Case(op, 5, 0, 7, "fp32", "gelu_tanh", bias=op == "linear_act"), device)
    out = getattr(fused_mlp, op)(**inputs)
    assert_close(out, OPS[op].reference(**inputs), torch.float32)


def _far_apart_columns(storage, offset, rows, cols, column_stride):
    """A (rows, cols) column-major view whose column stride is `column_stride` elements: the view
    trick for offsets past 2^31 without allocating them (only the touched pages become resident)."""
    view = storage.as_strided((rows, cols), (1, column_stride), offset)
    view.copy_(torch.randn(rows, cols, dtype=torch.float32) / cols**0.5)
    return view


def test_k_direction_offsets_past_int32(device):
    """Column-major x and weights whose K stride times k passes 2^31 elements: every offset a
    stride multiplies is int64, so no wrapped (wrong or out-of-bounds) address is read."""
    if device != "cpu":
        pytest.skip("the view trick relies on lazily committed CPU memory")
    stride = 2**30  # k = 2 is element 2^31: past int32
    M, K, N, width = 4, 3, 5, 16
    storage = torch.empty(2 * stride + 64, dtype=torch.float16)  # 4 GiB virtual, a few pages touched
    x = _far_apart_columns(storage, 0, M, K, stride)
    weight = _far_apart_columns(storage, 8, N, K, stride)  # (N, K) with strides (1, 2^30)
    w_up = _far_apart_columns(storage, 16, N, K, stride)
    bias = torch.randn(N, dtype=torch.float16)
    x_c, w_c, u_c = x.contiguous(), weight.contiguous(), w_up.contiguous()
    for name, out, ref in [
        ("linear_act", fused_mlp.linear_act(x, weight, bias, "relu"), OPS["linear_act"].reference(x_c, w_c, bias, "relu")),
        ("gated_up", fused_mlp.gated_up(x, weight, w_up, "silu"), OPS["gated_up"].reference(x_c, w_c, u_c, "silu")),
    ]:
        assert_close(out, ref, torch.float16, name)
    layers = [torch.randn(width, K, dtype=torch.float16) / K**0.5, torch.randn(2, width, dtype=torch.float16) / 4]
    assert_close(fused_mlp.narrow_mlp(x, layers, None, "relu"), OPS["narrow_mlp"].reference(x_c, layers, None, "relu"),
                 torch.float16, "narrow_mlp")
