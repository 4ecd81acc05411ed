"""quantize_fp8: scales, rounding bounds, saturation, zeros, and the inputs it refuses."""

import pytest
import torch

from fused_mlp import dequantize_fp8, quantize_fp8
from fused_mlp.quantize import E4M3_MAX, MIN_SCALE, quantize_activations_fp8

# e4m3 keeps 3 mantissa bits: rounding to nearest moves a normal value by at most 2^-4 of itself.
E4M3_HALF_ULP = 2.0 ** -4
E4M3_MIN_NORMAL = 2.0 ** -6


@pytest.mark.parametrize("granularity", ["tensor", "row"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_scales_map_each_amax_onto_448_and_rounding_stays_within_half_an_ulp(granularity, dtype):
    t = (torch.randn(13, 40, generator=torch.Generator().manual_seed(0)) * torch.logspace(-2, 2, 13)[:, None]).to(dtype)
    q, scale = quantize_fp8(t, granularity)
    assert q.dtype == torch.float8_e4m3fn and q.shape == t.shape and scale.dtype == torch.float32
    rows = t.float() if granularity == "row" else t.float().reshape(1, -1)
    assert scale.shape == (rows.shape[0],)
    torch.testing.assert_close(scale, rows.abs().amax(dim=1) / E4M3_MAX, rtol=0, atol=0)
    assert (q.float().reshape(rows.shape).abs().amax(dim=1) == E4M3_MAX).all()
    back = dequantize_fp8(q, scale, torch.float64)
    normal = (t.double() / scale.double().reshape(-1, 1).expand(rows.shape).reshape(t.shape)).abs() >= E4M3_MIN_NORMAL
    rel = ((back - t.double()).abs() / t.double().abs())[normal]
    assert rel.max().item() <= E4M3_HALF_ULP


def test_a_given_scale_saturates_at_448_times_it():
    t = torch.tensor([[1000.0, -1000.0, 10.0, 448.0]])
    q, scale = quantize_fp8(t, "tensor", scale=torch.tensor([1.0]))
    assert q.float().tolist() == [[448.0, -448.0, 10.0, 448.0]]
    assert scale.tolist() == [1.0]


def test_a_row_of_zeros_gets_scale_one_and_stays_zero():
    t = torch.zeros(3, 8)
    t[1] = torch.arange(8.0)
    q, scale = quantize_fp8(t, "row")
    assert scale[0].item() == 1.0 and scale[2].item() == 1.0 and scale[1].item() == pytest.approx(7 / 448)
    assert (q[0].float() == 0).all() and (q[2].float() == 0).all()


def test_tiny_values_get_a_normal_scale():
    q, scale = quantize_fp8(torch.full((1, 4), 1e-42), "tensor")
    assert scale.item() == MIN_SCALE  # not a subnormal scale a GPU could flush to zero


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_input_is_refused(bad):
    t = torch.ones(2, 3)
    t[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or Inf"):
        quantize_fp8(t, "row")


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(tensor=torch.ones(2, 2, dtype=torch.float64)), TypeError, "float64"),
    (dict(tensor=[1.0]), TypeError, "torch.Tensor"),
    (dict(tensor=torch.ones(2, 2), granularity="channel"), ValueError, "granularity"),
    (dict(tensor=torch.ones(4), granularity="row"), ValueError, "at least 2 dims"),
    (dict(tensor=torch.ones(3, 2), granularity="row", scale=torch.ones(2)), ValueError, r"\(3,\)"),
    (dict(tensor=torch.ones(3, 2), scale=torch.zeros(1)), ValueError, "positive"),
    (dict(tensor=torch.ones(3, 2), scale=torch.ones(1, dtype=torch.float16)), TypeError, "float32"),
])
def test_bad_arguments_name_the_problem(kwargs, error, match):
    with pytest.raises(error, match=match):
        quantize_fp8(**kwargs)


@pytest.mark.parametrize("granularity", ["tensor", "row"])
def test_activation_quantizer_gives_quantize_fp8s_bits_without_the_read_back(granularity):
    """quantize_activations_fp8 (inside forwards): the same bits and scales as quantize_fp8 for
    finite input; a non-finite value is not refused but makes its row non-finite."""
    t = torch.randn(2, 5, 24, generator=torch.Generator().manual_seed(3), dtype=torch.float32).to(torch.bfloat16)
    q, s = quantize_activations_fp8(t, granularity)
    q_ref, s_ref = quantize_fp8(t, granularity)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8)) and torch.equal(s, s_ref)
    t[1, 2, 3] = float("inf")
    q, s = quantize_activations_fp8(t, "row")
    assert not torch.isfinite(s[7]) and torch.isfinite(s[:7]).all()
    with pytest.raises(ValueError, match="granularity='col'"):
        quantize_activations_fp8(t, "col")


@pytest.mark.parametrize("granularity", ["tensor", "row"])
def test_e4m3fnuz_scales_map_each_amax_onto_240(granularity):
    """MI300's encoding: largest 240, so scale = amax / 240; the activation quantizer agrees bit for bit."""
    t = torch.randn(9, 24, generator=torch.Generator().manual_seed(3)) * torch.logspace(-1, 1, 9)[:, None]
    q, scale = quantize_fp8(t, granularity, fp8_dtype=torch.float8_e4m3fnuz)
    rows = t if granularity == "row" else t.reshape(1, -1)
    assert q.dtype == torch.float8_e4m3fnuz and torch.finfo(q.dtype).max == 240.0
    torch.testing.assert_close(scale, rows.abs().amax(dim=1) / 240.0, rtol=0, atol=0)
    assert (q.float().reshape(rows.shape).abs().amax(dim=1) == 240.0).all()
    rel = ((dequantize_fp8(q, scale, torch.float64) - t.double()).abs() / t.double().abs())
    assert rel[(t.abs() / scale.reshape(-1, 1).expand(rows.shape).reshape(t.shape)) >= 2.0 ** -7].max() <= E4M3_HALF_ULP
    aq, ascale = quantize_activations_fp8(t, granularity, fp8_dtype=torch.float8_e4m3fnuz)
    assert torch.equal(aq.view(torch.uint8), q.view(torch.uint8)) and torch.equal(ascale, scale)


def test_an_encoding_other_than_e4m3_is_refused():
    with pytest.raises(TypeError, match=r"fp8_dtype=torch.float8_e5m2; expected torch.float8_e4m3fn or "
                                        r"torch.float8_e4m3fnuz \(fused_mlp.native_fp8_dtype"):
        quantize_fp8(torch.ones(2, 2), fp8_dtype=torch.float8_e5m2)
