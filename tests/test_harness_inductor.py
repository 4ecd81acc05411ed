"""The Inductor flags the compile implementations rely on (harness/inductor.py): they hold in
this torch, a changed one fails the row with the flag named, and the caches are on disk."""

import re

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config

from benchmarks import bench_ops
from benchmarks.harness import implementations, inductor
from workload.grids import grid
from benchmarks.harness.tensors import make_inputs


@pytest.fixture(autouse=True)
def _fresh_graphs():
    yield
    implementations.reset_compiled()


def test_the_flags_relied_on_hold_in_this_torch():
    """What the module's docstring says, read from torch 2.11 and 2.13, still holds here: a torch
    upgrade that changes a default shows up as a failure, not as a silently different peer."""
    assert torch._inductor.list_mode_options(inductor.MAX_AUTOTUNE_MODE) == {
        "max_autotune": True, "coordinate_descent_tuning": True}
    assert config.epilogue_fusion and config.benchmark_epilogue_fusion
    assert config.max_epilogue_benchmarked_choices == 1
    assert {"ATEN", "TRITON"} <= set(inductor._gemm_backends(config))
    assert config.fx_graph_cache and config.autotune_local_cache and not config.force_disable_caches
    assert inductor.config_problems(None) == [] and inductor.config_problems(inductor.MAX_AUTOTUNE_MODE) == []


@pytest.mark.parametrize("flag,value,named", [
    ("epilogue_fusion", False, "epilogue_fusion is off"),
    ("max_autotune_gemm_backends", "ATEN", "lacks ['TRITON']"),
    ("max_autotune_gemm_backends", "TRITON", "lacks ['ATEN']"),
    ("fx_graph_cache", False, "FX graph cache is off"),
    ("autotune_local_cache", False, "autotune cache is off"),
])
def test_a_changed_flag_fails_the_row_with_its_name(flag, value, named):
    with config.patch({flag: value}):  # Inductor's own way to change a flag for a while
        with pytest.raises(RuntimeError, match=re.escape(named)):
            inductor.check_config(inductor.MAX_AUTOTUNE_MODE)
        filed = bench_ops.LinearAct().measure_all(grid("tiny")["linear_act"][0].key, "compile_max_autotune")
    assert "metrics" not in filed and named in filed["failed"]


def test_the_default_mode_relies_on_the_caches_only():
    with config.patch(epilogue_fusion=False):
        assert inductor.config_problems(None) == []
        with config.patch(force_disable_caches=True):
            assert inductor.config_problems(None) == [
                "Inductor's FX graph cache is off (fx_graph_cache / force_disable_caches)"]


def test_the_cache_folder_is_the_callers_or_a_lasting_default(monkeypatch, tmp_path):
    monkeypatch.setenv(inductor.CACHE_ENV, str(tmp_path))
    assert inductor.use_disk_caches() == str(tmp_path)
    monkeypatch.delenv(inductor.CACHE_ENV)
    assert inductor.use_disk_caches() == inductor.DEFAULT_CACHE_DIR
    assert not inductor.DEFAULT_CACHE_DIR.startswith("/tmp")


def test_a_second_compile_loads_the_graph_from_the_disk_cache(monkeypatch, tmp_path):
    """What a second asv process sees: the same graph compiled again after Dynamo forgot it is
    an FX graph cache hit, read from TORCHINDUCTOR_CACHE_DIR."""
    monkeypatch.setenv(inductor.CACHE_ENV, str(tmp_path))
    case = grid("tiny")["linear_act"][0]
    inputs = make_inputs(case)
    counters.clear()
    implementations.prepare(case, "compile", inputs)()
    assert counters["inductor"]["fxgraph_cache_miss"] >= 1 and counters["inductor"]["fxgraph_cache_hit"] == 0
    implementations.reset_compiled()
    implementations.prepare(case, "compile", inputs)()
    assert counters["inductor"]["fxgraph_cache_hit"] >= 1
    assert any(tmp_path.rglob("*")), "nothing was written under TORCHINDUCTOR_CACHE_DIR"
