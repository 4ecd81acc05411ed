"""The suite's FP8 dtypes (benchmarks/harness/fp8.py): the grids' FP8 Cases, their bytes at one
byte per e4m3 element, the roof they run against, the implementations that run them (and the
ones that skip, with the reason), and the tiny grid's FP8 cases measured on the CPU."""

import math

import pytest
import torch

from benchmarks import bench_ops
from benchmarks.harness import fp8, implementations
from workload import cost, grids
from workload.cost import Ceilings
from benchmarks.harness.ops import spec_of
from benchmarks.harness.references import mismatch, reference
from benchmarks.harness.tensors import make_inputs, torch_dtype
from benchmarks.harness.tolerances import tolerance
from workload.case import DTYPES, Case


def test_the_grids_hold_both_forms_and_full_adds_per_tensor_scales():
    for name, op in (("tiny", "linear_act"), ("tiny", "gated_mlp"), ("default", "linear_act")):
        assert {c.dtype for c in grids.grid(name)[op]} >= {"fp8", "w8a16"}, (name, op)
    assert sum(1 for c in grids.grid("tiny")["linear_act"] if fp8.is_fp8(c.dtype)) == 2  # one per form
    default = {c.key for c in grids.grid("default")["linear_act"]}
    assert {"linear_act M=1 K=4096 N=14336 w8a16 gelu_tanh bias", "linear_act M=16 K=4096 N=14336 w8a16 gelu_tanh bias",
            "linear_act M=8192 K=4096 N=14336 fp8 gelu_tanh bias"} <= default
    assert {"gated_mlp M=8192 K=4096 N=14336 fp8 silu"} <= {c.key for c in grids.grid("default")["gated_mlp"]}
    assert "gated_mlp M=16 K=4096 N=14336 w8a16 silu" in {c.key for c in grids.grid("full")["gated_mlp"]}
    assert "gated_mlp M=8192 K=768 N=3072 fp8 gelu_tanh" in {c.key for c in grids.grid("full")["gated_mlp"]}
    assert "fp8_tensor" in {c.dtype for c in grids.grid("full")["linear_act"]}
    assert not any(fp8.is_fp8(c.dtype) for cases in grids.training_grid("default").values() for c in cases)


def test_fp8_case_keys_round_trip_and_only_ops_with_an_fp8_form_take_them():
    for dtype in fp8.FP8_DTYPES:
        case = Case("linear_act", 16, 4096, 14336, dtype, "silu", bias=True)
        assert Case.from_key(case.key) == case
    with pytest.raises(ValueError, match="narrow_mlp has no FP8 form"):  # the op registry checks a Case
        spec_of(Case.from_widths("narrow_mlp", 64, (32, 32, 32), "fp8"))
    with pytest.raises(ValueError, match="expected one of .*'w8a16'"):
        Case("linear_act", 1, 2, 3, "int8", "relu")
    assert DTYPES == ("fp32", "fp16", "bf16")  # the float dtypes every op runs in, as before


@pytest.mark.parametrize("dtype,expected", [
    # x 2x3, W 5x3 at 1 byte; x scales 2, W scales 5 (fp32); bias 5 and out 2x5 in bf16
    ("fp8", 6 + 2 * 4 + 15 + 5 * 4 + 5 * 2 + 10 * 2),
    ("fp8_tensor", 6 + 4 + 15 + 4 + 5 * 2 + 10 * 2),  # one scale each
    ("w8a16", 6 * 2 + 15 + 5 * 4 + 5 * 2 + 10 * 2),  # bf16 x, no x scale
])
def test_min_bytes_count_one_byte_per_e4m3_element(dtype, expected):
    assert cost.min_bytes(Case("linear_act", 2, 3, 5, dtype, "relu", bias=True)) == expected


def test_gated_mlp_min_bytes():
    # x 4x8 and out 4x8; three 16x8 weights; per-row scales: 4 for x, 16 + 16 + 8 for the weights
    assert cost.min_bytes(Case("gated_mlp", 4, 8, 16, "fp8", "silu")) == 32 + 3 * 128 + 4 * (4 + 40) + 32 * 2


def test_decode_floor_is_half_of_bf16s():
    """Llama-3-8B's up projection at M = 1 is all weight bytes: FP8 halves the floor."""
    ceilings = Ceilings(copy_gbps=4000.0, matmul_tflops={"bf16": 700.0, "fp8": 1400.0})
    bf16, w8 = (cost.floor_seconds(Case("linear_act", 1, 4096, 14336, d, "silu", bias=True), ceilings)
                for d in ("bf16", "w8a16"))
    assert math.isclose(w8 / bf16, 0.5, rel_tol=0.01)


def test_each_form_runs_against_its_matmul_roof():
    """W8A8 on the FP8 roof, W8A16 on bf16's (its dot is bf16); a run without an FP8 ceiling
    has no floor for W8A8 rather than a wrong one."""
    assert [cost.roof_dtype(Case("linear_act", 8, 8, 8, d, "relu")) for d in ("fp8", "fp8_tensor", "w8a16", "bf16")] \
        == ["fp8", "fp8", "bf16", "bf16"]
    big = Case("linear_act", 8192, 4096, 14336, "fp8", "relu")
    fast, slow = Ceilings(4000.0, {"fp8": 1000.0}), Ceilings(4000.0, {"fp8": 500.0})
    assert math.isclose(cost.floor_seconds(big, slow), 2 * cost.floor_seconds(big, fast))
    with pytest.raises(ValueError, match="no matmul TFLOP/s for fp8"):
        cost.floor_seconds(big, Ceilings(4000.0, {"bf16": 700.0}))


@pytest.mark.parametrize("case,impl,why", [
    (Case("linear_act", 16, 64, 96, "fp8", "silu", bias=True), "cublaslt", "cublaslt has no FP8 (fp8) form"),
    (Case("gated_mlp", 16, 64, 96, "fp8", "silu"), "liger_mlp", "liger_mlp has no FP8 (fp8) form"),
    (Case("linear_act", 16, 64, 96, "fp8", "silu", bias=True), "compile_max_autotune", "no FP8"),
    (Case("linear_act", 16, 64, 96, "w8a16", "silu", bias=True), "scaled_mm", "W8A16 (bf16 x) has no _scaled_mm"),
    (Case("linear_act", 16, 64, 96, "bf16", "silu", bias=True), "scaled_mm", "runs the FP8 dtypes only"),
    (Case("gated_mlp", 16, 64, 96, "bf16", "silu"), "scaled_mm_compile", "runs the FP8 dtypes only"),
])
def test_implementations_without_an_fp8_form_skip_with_the_reason(case, impl, why):
    assert why in implementations.unavailable_reason(case, impl, "cpu")


def test_fp8_cases_are_forward_only():
    case = Case("linear_act", 16, 64, 96, "fp8", "silu", bias=True)
    assert "forward-only" in implementations.unavailable_reason(case, "eager", "cpu", mode="backward")


def test_inputs_are_quantized_once_and_the_reference_uses_their_dequantized_values():
    case = Case("linear_act", 5, 40, 24, "fp8", "gelu", bias=True)
    inputs = make_inputs(case)
    assert inputs["x"].dtype == inputs["weight"].dtype == torch.float8_e4m3fn
    assert inputs["x_scale"].shape == (5,) and inputs["weight_scale"].shape == (24,)
    x64 = inputs["x"].double() * inputs["x_scale"].double()[:, None]
    w64 = inputs["weight"].double() * inputs["weight_scale"].double()[:, None]
    expected = torch.nn.functional.gelu(x64 @ w64.T + inputs["bias"].double())
    assert torch.allclose(reference(case, inputs), expected, rtol=1e-12, atol=0)
    per_tensor = make_inputs(Case("linear_act", 5, 40, 24, "fp8_tensor", "gelu", bias=True))
    assert per_tensor["x_scale"].shape == per_tensor["weight_scale"].shape == (1,)
    w8a16 = make_inputs(Case("linear_act", 5, 40, 24, "w8a16", "gelu", bias=True))
    assert w8a16["x"].dtype == torch.bfloat16 and w8a16["x_scale"] is None


def test_the_check_catches_a_wrong_result():
    """The tolerance is bf16's for linear_act, e4m3's only where the contract stores e4m3 (a
    W8A8 gated MLP's hidden): 2 % off fails the first, 8 % off the second."""
    lin = Case("linear_act", 16, 64, 96, "fp8", "silu", bias=True)
    gated = Case("gated_mlp", 16, 64, 96, "fp8", "silu")
    for case, wrong, caught in ((lin, 1.02, True), (gated, 1.02, False), (gated, 1.08, True)):
        inputs = make_inputs(case)
        ref = reference(case, inputs)
        problem = mismatch((ref * wrong).to(torch.bfloat16), ref, torch_dtype(case), tolerance(case))
        assert (problem is not None) == caught, (case.key, wrong, problem)
    assert tolerance(lin) < 0.011 and 0.06 < tolerance(gated) < 0.07


def _measure(cls, case, impl):
    return cls().measure_all(case.key, impl)


TINY = {c.key: (cls, c) for cls in (bench_ops.LinearAct, bench_ops.GatedMLP)
        for c in grids.grid("tiny")[cls.op] if fp8.is_fp8(c.dtype)}


@pytest.mark.parametrize("key", sorted(TINY))
@pytest.mark.parametrize("impl", ["fused", "eager", "scaled_mm"])
def test_tiny_fp8_cases_measure_on_the_cpu(key, impl):
    """Each is checked against the float64 reference before it is timed (the measuring pass
    raises otherwise); scaled_mm skips W8A16 with its reason."""
    cls, case = TINY[key]
    result = _measure(cls, case, impl)
    if impl == "scaled_mm" and case.dtype == "w8a16":
        assert "no _scaled_mm form" in result["skip"]
        return
    if impl == "scaled_mm" and fp8.scaled_mm_missing("cpu"):
        assert result == {"skip": fp8.scaled_mm_missing("cpu")}
        return
    assert "metrics" in result, result
    assert len(result["metrics"]["latency"]["samples"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(TINY))
@pytest.mark.parametrize("impl", ["compile", "scaled_mm_compile"])
def test_tiny_fp8_cases_compile_on_the_cpu(key, impl):
    cls, case = TINY[key]
    implementations.reset_compiled()
    result = _measure(cls, case, impl)
    if impl == "scaled_mm_compile" and case.dtype == "w8a16":
        assert "skip" in result
        return
    assert "metrics" in result, result


def test_the_dashboard_floor_uses_each_forms_roof():
    """dashboard.data.metrics: an fp8 row's floor comes from the run's FP8 ceiling, a w8a16 row's
    from bf16's; a run that measured no FP8 ceiling has no floor for fp8 (NaN), not a wrong one."""
    import numpy as np
    import pandas as pd

    from dashboard.data import derived_metrics

    keys = ["linear_act M=8192 K=4096 N=14336 fp8 gelu_tanh bias", "linear_act M=1 K=4096 N=14336 w8a16 gelu_tanh bias"]
    rows = pd.DataFrame({"case": keys, "machine": "m", "env_name": "e", "commit_hash": "c"})
    table = pd.DataFrame({"machine": ["m"], "env_name": ["e"], "commit_hash": ["c"], "copy_gbps": [4000.0],
                          "tflops_bf16": [700.0], "tflops_fp8": [1400.0]})
    floors = derived_metrics.floor_seconds_per_row(rows, table)
    ceilings = Ceilings(4000.0, {"bf16": 700.0, "fp8": 1400.0})
    assert np.allclose(floors, [cost.floor_seconds(Case.from_key(k), ceilings) for k in keys])
    assert floors[0] < 1.01 * cost.flops(Case.from_key(keys[0])) / 1400e12  # compute-bound on the FP8 roof
    no_fp8 = derived_metrics.floor_seconds_per_row(rows, table.drop(columns="tflops_fp8"))
    assert np.isnan(no_fp8[0]) and np.isclose(no_fp8[1], floors[1])


def test_w8a8_skips_on_a_gpu_without_fp8_tensor_cores(monkeypatch):
    """On an A100 (sm_80) the W8A8 kernels and _scaled_mm skip with the reason; the dequantizing
    eager baseline and W8A16 still run."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    fp8.fp8_tensor_cores_missing.cache_clear()
    try:
        w8a8 = Case("linear_act", 16, 64, 96, "fp8", "silu", bias=True)
        for impl in ("fused", "scaled_mm"):
            assert "sm_89 or newer); this GPU is sm_80" in fp8.unavailable(w8a8, impl, "cuda")
        assert fp8.unavailable(w8a8, "eager", "cuda") is None
        assert fp8.unavailable(Case("linear_act", 16, 64, 96, "w8a16", "silu", bias=True), "fused", "cuda") is None
    finally:
        fp8.fp8_tensor_cores_missing.cache_clear()


def test_quantization_error_tool_measures_each_fp8_case(capsys):
    """tools/measure_fp8_error.py: one row per FP8 Case (and per-tensor twin); the error is of
    e4m3's size (3 mantissa bits: a few 1e-2), and quantizing x too (W8A8) costs more than the
    weights alone (W8A16) on the same shape."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tools" / "measure_fp8_error.py"
    spec = importlib.util.spec_from_file_location("measure_fp8_error", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--grid", "tiny", "--rows", "8"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    assert len(rows) == len(tool.cases_of("tiny")) == 6
    errors = {(r[0].strip("| "), r[1], r[2]): float(r[3].strip(" |")) for r in rows}
    assert all(5e-3 < e < 0.2 for e in errors.values()), errors
    lin = "linear_act M=16 K=64 N=96 silu"
    assert errors[(lin, "W8A16", "per channel (weights)")] < errors[(lin, "W8A8", "per token / per channel")]
    with pytest.raises(SystemExit):
        tool.main(["--rows", "0"])


def test_fp8_results_reach_the_dashboards_roofline(tmp_path):
    """A results folder holding FP8 cases and an FP8 matmul ceiling (as the suite writes them):
    the dashboard reads fp8 and w8a16 as dtypes, and each point's roofline fraction is finite,
    so it had a roof (FP8's for fp8, bf16's for w8a16)."""
    import numpy as np

    from dashboard.store.model import ResultsStore
    from dashboard.pages import roofline
    from tests.asv_fixtures import write_history
    from tests.suite_fixtures import SYNTH_CEILINGS, case_series, ceiling_series

    ceilings = Ceilings(SYNTH_CEILINGS.copy_gbps, {**SYNTH_CEILINGS.matmul_tflops, "fp8": 1360.0})
    cases = [c for c in grids.grid("default")["linear_act"] if fp8.is_fp8(c.dtype) and c.M in (1, 8192)]
    write_history(tmp_path, case_series(cases, ceilings=ceilings) + ceiling_series(ceilings), 2, machine="m")
    data = ResultsStore(tmp_path, detect_in_background=False).get()
    run = data.run("m", "existing-py_usr_bin_python3")  # write_history's env
    commit = run.commits["commit_hash"].tolist()[-1]
    points, roofs = roofline.roofline_points(data, "m", run.env_name, commit, {})
    assert set(points["dtype"].astype(str)) == {"fp8", "w8a16"}
    assert np.isfinite(points["roofline"].to_numpy(dtype=float)).all()
    assert "fp8" in roofs.matmul_tflops
    assert roofline.update(data, "m", run.env_name, commit)["data"]
