"""The H200 time model (benchmarks.suite_cost) on the suite's real grids: the counts are the
suite's own (asv processes, measured combinations, one compile per cache key). Whether a grid
fits is a question of the GPU session's calls: tests/test_session_cost.py holds the quick stage
to its cap and each part of the default grid to 80 % of a call, cold caches."""

import itertools
import math

import pytest

from benchmarks import suite_cost
from benchmarks.harness import implementations
from workload import grids
from benchmarks.harness.ops import OPS
from workload.case import Case

GRIDS = ("quick", "default")


@pytest.fixture(scope="module")
def cold():
    return {grid: suite_cost.model(grid, warm=False) for grid in GRIDS}


def _total(per_class):
    whole = suite_cost.Cost()
    for c in per_class.values():
        whole = whole.add(c)
    return whole


@pytest.mark.parametrize("grid", GRIDS)
def test_the_whole_is_its_parts(cold, grid):
    total = _total(cold[grid])
    assert total.seconds == pytest.approx(sum(total.parts.values())) and set(total.parts) <= set(suite_cost.PARTS)


def test_a_call_s_classes_fill_the_caches_alone(cold):
    """A later call runs some classes from cold caches: GatedMLP's max-autotune shapes, shared with
    LinearAct's in the whole grid, are its own to tune when it runs alone."""
    alone = suite_cost.model("default", warm=False, only=lambda name: name.startswith("bench_ops.GatedMLP."))
    assert set(alone) == {"asv run", "benchmarks.bench_ops.GatedMLP"}
    whole = cold["default"]
    assert alone["benchmarks.bench_ops.GatedMLP"].max_autotune_gemms > whole["benchmarks.bench_ops.GatedMLP"].max_autotune_gemms


def test_the_counts_are_the_suite_s_own(cold):
    """asv processes: every combination x metric of every timing class; measured: the
    combinations whose implementation the grid runs (CUDA assumed; fused counted as it may train)."""
    with suite_cost._grid_selected("default"):
        classes = suite_cost.timing_classes("default")
        names = {f"{c.__module__}.{c.__name__}" for c in classes}
        assert names == set(cold["default"]) - {"asv run"}
        assert {n.split(".")[1] for n in names} == {"bench_device", "bench_hot", "bench_ops", "bench_training"}
        for cls in classes:
            combos = list(itertools.product(*cls.params))
            c = cold["default"][f"{cls.__module__}.{cls.__name__}"]
            assert c.processes == len(combos) * len(suite_cost._metrics(cls))
            if not hasattr(cls, "op"):
                continue
            mode = lambda rest: rest[0] if rest else "forward"  # noqa: E731
            runs = [(k, i, r) for k, i, *r in combos
                    if i == implementations.FUSED or not implementations.unavailable_reason(Case.from_key(k), i, "cuda", mode(r))]
            assert c.measured == len(runs) > 0


def test_caches_are_paid_once(cold):
    """Backward and full share a training graph; the linear up projection's max-autotune GEMM
    shape is one of the SwiGLU MLP's forward ones, and the trained SwiGLU's forward shapes are the
    forward grid's: the default grid tunes 4 shapes in all, the training adding its dX and dW."""
    default = cold["default"]
    training = default["benchmarks.bench_training.GatedMLPTraining"]
    # compile and max-autotune: forward + backward graph each, once for two modes
    assert training.torch_compiles == 4
    assert training.max_autotune_gemms == 2
    assert _total(default).max_autotune_gemms == 4
    warm = _total(suite_cost.model("quick", warm=True))
    assert warm.torch_compiles == warm.max_autotune_gemms == 0 and warm.seconds < _total(cold["quick"]).seconds


def test_a_run_that_selects_some_implementations_models_only_them():
    """asv -b matches name(params): a run of GatedMLPTraining's max-autotune combinations alone
    measures those 2 (backward, full), tunes the 4 training shapes cold and starts 1 process a metric."""
    only = lambda name: name.startswith("bench_training.GatedMLPTraining.") and "'compile_max_autotune'" in name  # noqa: E731
    per_class = suite_cost.model("default", warm=False, only=only)
    assert set(per_class) == {"asv run", "benchmarks.bench_training.GatedMLPTraining"}
    c = per_class["benchmarks.bench_training.GatedMLPTraining"]
    with suite_cost._grid_selected("default"):
        from benchmarks.bench_training import GatedMLPTraining
        metrics = len(suite_cost._metrics(GatedMLPTraining))
    assert (c.measured, c.processes, c.torch_compiles, c.max_autotune_gemms) == (2, 2 * metrics, 2, 4)


def test_every_part_of_the_model_is_sourced():
    for name, (val, source) in suite_cost.INPUTS.items():
        assert source and (isinstance(val, dict) or math.isfinite(val)), name
    with pytest.raises(ValueError, match="unknown part"):
        suite_cost.Cost().spend("coffee", 1.0)


class TestLeftOut:
    """Where the grids' budgets leave an implementation out, with the reason (a skip, NaN)."""

    def test_quick_has_no_max_autotune_and_times_the_full_step_only(self):
        case = OPS["gated_mlp"].training_cases("quick")[0]
        assert "left out of the quick grid" in grids.left_out(case, "compile_max_autotune", "full", "quick")
        assert "full training step only" in grids.left_out(case, "eager", "backward", "quick")
        assert grids.left_out(case, "eager", "full", "quick") is None
        forward = OPS["gated_mlp"].cases("quick")[0]
        assert grids.left_out(forward, "compile", "forward", "quick") is None  # the seed question
        linear = OPS["linear_act"].cases("quick")[0]
        assert "gated MLP's forward only" in grids.left_out(linear, "compile", "forward", "quick")

    def test_default_compiles_where_the_question_is(self):
        up_8192 = Case("linear_act", 8192, 4096, 14336, "bf16", "gelu_tanh", bias=True)
        mid = Case("linear_act", 2048, 4096, 14336, "bf16", "gelu_tanh", bias=True)
        assert up_8192 in OPS["linear_act"].cases("default") and mid in OPS["linear_act"].cases("default")
        assert grids.left_out(up_8192, "compile", "forward", "default") is None
        assert grids.left_out(up_8192, "compile_max_autotune", "forward", "default") is None
        assert "main case" in grids.left_out(mid, "compile", "forward", "default")
        assert "training shapes" in grids.left_out(mid, "compile_max_autotune", "forward", "default")
        fp8_prefill = Case("linear_act", 8192, 4096, 14336, "fp8", "gelu_tanh", bias=True)
        for impl in ("compile", "scaled_mm_compile"):
            assert "full grid" in grids.left_out(fp8_prefill, impl, "forward", "default")
        assert grids.left_out(fp8_prefill, "scaled_mm", "forward", "default") is None
        assert "training modes" in grids.left_out(up_8192, "compile", "full", "default")
        swiglu = OPS["gated_mlp"].training_cases("default")[0]
        assert grids.left_out(swiglu, "compile", "backward", "default") is None
        assert grids.left_out(swiglu, "compile_max_autotune", "backward", "default") is None  # trained, 4 shapes
        other = OPS["linear_act"].training_cases("default")[0]
        assert "training modes" in grids.left_out(other, "compile", "full", "default")
        assert "gated_mlp only" in grids.left_out(other, "compile_max_autotune", "full", "default")
        assert grids.left_out(grids.SEED_GEGLU, "compile", "forward", "default") is None

    def test_tiny_full_and_cases_outside_a_grid_run_everything(self):
        tiny = OPS["linear_act"].cases("tiny")[0]
        outside = Case("linear_act", 7, 4096, 14336, "fp32", "gelu_tanh", bias=True)
        for impl in ("compile", "compile_max_autotune"):
            for mode in ("forward", "backward"):
                assert grids.left_out(tiny, impl, mode, "tiny") is None
                assert grids.left_out(outside, impl, mode, "default") is None
        assert grids.left_out(OPS["linear_act"].cases("full")[-1], "compile", "forward", "full") is None
