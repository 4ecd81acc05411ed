"""Case keys round trip; the cost model against hand-computed numbers."""

import pytest

from workload.cost import Ceilings, arithmetic_intensity, flops, floor_seconds, min_bytes
from benchmarks.harness.ops import output_features
from workload.case import Case

H200 = Ceilings(copy_gbps=4270.0, matmul_tflops={"bf16": 680.0, "fp16": 680.0, "fp32": 50.0})


@pytest.mark.parametrize("case", [
    Case("linear_act", 16, 4096, 14336, "bf16", "gelu_tanh", bias=True),
    Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh"),
    Case("gated_up", 1, 7, 9, "fp32", "silu"),
    Case.from_widths("narrow_mlp", 2**21, (64, 64, 64, 64, 64, 64), "fp16", "relu"),
])
def test_key_round_trip(case):
    assert Case.from_key(case.key) == case


def test_linear_act_cost():
    case = Case("linear_act", 2048, 4096, 16384, "bf16", "gelu", bias=True)
    assert flops(case) == 2 * 2048 * 4096 * 16384
    assert min_bytes(case) == 2 * (2048 * 4096 + 16384 * 4096 + 2048 * 16384 + 16384)


def test_seed_geglu_cost_and_floor():
    """The seed's GeGLU MLP: 116 GFLOP; on the DESIGN's H200 ceilings its floor is ~171 us."""
    case = Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh")
    assert flops(case) == 6 * 8192 * 768 * 3072
    assert round(flops(case) / 1e9) == 116
    assert min_bytes(case) == 2 * (2 * 8192 * 768 + 3 * 768 * 3072)
    assert floor_seconds(case, H200) == pytest.approx(flops(case) / 680e12)
    assert 170e-6 < floor_seconds(case, H200) < 172e-6


def test_decode_linear_is_memory_bound():
    case = Case("linear_act", 1, 4096, 16384, "bf16", "gelu")
    assert floor_seconds(case, H200) == pytest.approx(min_bytes(case) / 4270e9)
    assert arithmetic_intensity(case) < 1.01


def test_narrow_cost():
    case = Case.from_widths("narrow_mlp", 1000, (3, 64, 64, 7), "fp16", bias=True)
    assert flops(case) == 2 * 1000 * (3 * 64 + 64 * 64 + 64 * 7)
    weights = 3 * 64 + 64 * 64 + 64 * 7 + (64 + 64 + 7)
    assert min_bytes(case) == 2 * (1000 * 3 + 1000 * 7 + weights)
    assert (case.K, case.N, output_features(case)) == (3, 64, 7)


def test_ceilings_are_checked():
    with pytest.raises(ValueError, match="copy_gbps"):
        Ceilings(copy_gbps=0, matmul_tflops={})
    with pytest.raises(ValueError, match="no matmul TFLOP/s for fp16"):
        floor_seconds(Case("linear_act", 1, 2, 3, "fp16", "relu"), Ceilings(1.0, {"bf16": 1.0}))
