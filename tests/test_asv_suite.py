"""The asv suite: `asv check`, and a real CPU run of the tiny grid whose result files are read
back (names, params, samples; skipped = NaN, failed = null)."""

import itertools
import json
import math

import pytest

from benchmarks import bench_ops, common, skip_reasons
from workload.grids import GRIDS, benchmarked_ops, grid
from benchmarks.harness.ops import OPS
from workload.case import Case
from asv_results.loading import load_results

from tests.suite_run import OUTCOMES_DIRNAME, ROOT, asv_env as _asv_env, asv_project as _asv_project, asv as _asv, run_tiny_suite


@pytest.mark.slow
@pytest.mark.parametrize("grid_name", ["default", "tiny"])
def test_asv_check(tmp_path, grid_name):
    conf = _asv_project(tmp_path)
    done = _asv(conf, _asv_env(tmp_path, grid_name), "check", "-E", "existing:same")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No problems found" in done.stdout


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return run_tiny_suite(tmp_path_factory.getbasetemp())  # once per session, shared with the dashboard tests


def _column(doc, name, benchmark):
    row = doc["results"][benchmark]
    return dict(zip(doc["result_columns"], row)).get(name)


@pytest.mark.slow  # a real asv run of the tiny grid, shared by these tests
def test_run_exits_2_because_of_the_planted_failure_only(tiny_run):
    done, doc, _ = tiny_run
    assert done.returncode == 2, done.stdout + done.stderr  # asv's exit code when a benchmark failed
    failed = [name for name, row in doc["results"].items()
              if row[0] is None or any(v is None for v in row[0])]
    assert failed and all(name.startswith("bench_broken.") for name in failed), failed


@pytest.mark.slow
def test_machine_identity_is_recorded(tiny_run):
    _, doc, _ = tiny_run
    for key in ("gpu", "cuda", "driver", "torch", "triton"):
        assert key in doc["params"], key
    assert doc["params"]["gpu"] == "none"


@pytest.mark.slow
def test_every_family_ran_with_samples_and_skips(tiny_run):
    _, doc, _ = tiny_run
    assert benchmarked_ops() == ["linear_act", "gated_mlp", "narrow_mlp"]
    for family in benchmarked_ops():
        cls = OPS[family].benchmark_class
        name = f"bench_ops.{cls}.track_latency"
        params = _column(doc, "params", name)
        assert params[0] == [repr(c.key) for c in grid("tiny")[family]]
        impls = [eval(p) for p in params[1]]  # asv stores repr() strings
        results = dict(zip(impls, _column(doc, "result", name)))
        samples = dict(zip(impls, _column(doc, "samples", name)))
        assert math.isnan(results["fused"]), "Triton must skip (NaN) without CUDA"
        assert samples["fused"] is None
        for impl in ("eager", "compile"):
            assert results[impl] > 0 and len(samples[impl]) == common._CaseBenchmark.samples
        if family == "linear_act":  # its cuBLASLt peer needs CUDA: skipped (NaN), and listed
            assert math.isnan(results["cublaslt"])
        # peak memory and kernel counts need CUDA: skipped, not failed
        for metric in ("track_peak_memory", "track_kernels_per_call"):
            values = _column(doc, "result", f"bench_ops.{cls}.{metric}")
            assert all(math.isnan(v) for v in values), (metric, values)


@pytest.mark.slow
def test_static_compile_metrics_are_recorded(tiny_run):
    """The tiny grid compiles linear_act's sm_90 configs in bf16, both variants and their training
    forwards (which store Z too): registers, spills, shared memory."""
    _, doc, _ = tiny_run
    params = _column(doc, "params", "bench_compile.KernelResources.track_registers")
    variants = {p.split(" ")[0] for p in params[0]}
    assert params[1] == ["'bf16'"] and variants == {"'linear_act/tile", "'linear_act/persistent",
                                                  "'linear_act/tile-train", "'linear_act/persistent-train"}, params
    registers = _column(doc, "result", "bench_compile.KernelResources.track_registers")
    shared = _column(doc, "result", "bench_compile.KernelResources.track_shared_memory")
    spills = _column(doc, "result", "bench_compile.KernelResources.track_spill_bytes")
    # one list for every architecture: on sm_90 the AMD-form configs (their knobs in the label) are
    # skipped (NaN), every other one is compiled
    amd_form = [" wpe" in label for label in params[0]]
    assert len(registers) == len(amd_form) and any(amd_form) and not all(amd_form)
    for values in (registers, shared, spills):
        assert [isinstance(v, float) and math.isnan(v) for v in values] == amd_form, values
    compiled = [(r, s, b) for r, s, b, amd in zip(registers, shared, spills, amd_form) if not amd]
    assert all(0 < r <= 255 and s > 1024 and b == 0 for r, s, b in compiled), compiled


@pytest.mark.slow
def test_every_nan_and_null_of_a_case_benchmark_has_its_reason_kept(tiny_run):
    """The reasons asv does not store, as benchmarks.run keeps them (benchmarks/skip_reasons.py)."""
    _, doc, results_dir = tiny_run
    entries, _ = skip_reasons.collect(results_dir.parent / OUTCOMES_DIRNAME)
    reasons = {(e["benchmark"], json.dumps(e["params"], sort_keys=True)): e for e in entries}
    checked = 0
    for name, row in doc["results"].items():
        if not name.startswith(("bench_ops.", "bench_training.", "bench_hot.", "bench_broken.")):
            continue
        cols = dict(zip(doc["result_columns"], row))
        params = [dict(zip(["case", "impl", "mode"], map(eval, combo))) for combo in itertools.product(*cols["params"])]
        values = cols["result"] if cols["result"] is not None else [None] * len(params)  # null: all failed
        for value, combo in zip(values, params):
            if value is None or math.isnan(value):
                entry = reasons[(name, json.dumps(combo, sort_keys=True))]
                assert entry["status"] == ("failed" if value is None else "skipped") and entry["reason"], entry
                checked += 1
    assert checked > 20
    float_case = grid("tiny")["linear_act"][0].key  # the FP8 Cases give cuBLASLt another reason
    cublaslt = next(e for e in entries if e["benchmark"] == "bench_ops.LinearAct.track_latency"
                    and e["params"]["impl"] == "cublaslt" and e["params"]["case"] == float_case)
    assert cublaslt["reason"] == "cublaslt needs a CUDA device"
    hot = [e for e in entries if e["benchmark"].startswith("bench_hot.")]  # listed on the CPU, each skip said
    assert len(hot) == 2 * 2 * len(benchmarked_ops())  # graph replay and launch overhead, fused and eager
    assert all(e["status"] == "skipped" and "needs a CUDA device" in e["reason"] for e in hot)
    broken = next(e for e in entries if e["benchmark"] == "bench_broken.BrokenGate.track_latency")
    assert broken["status"] == "failed" and "computes a wrong result" in broken["reason"]


@pytest.mark.slow
def test_ceilings_are_recorded_as_times(tiny_run):
    _, doc, _ = tiny_run
    copy = _column(doc, "result", "bench_device.CopyCeiling.track_copy_seconds")
    assert math.isnan(copy[0]) and copy[1] > 0  # GPU size skipped, CPU size measured
    matmul = _column(doc, "result", "bench_device.MatmulCeiling.track_matmul_seconds")
    assert sum(v > 0 for v in matmul if not math.isnan(v)) == 1  # fp32 at the CPU size


@pytest.mark.slow
def test_results_load_into_the_dashboard_frame(tiny_run):
    _, _, results_dir = tiny_run
    loaded = load_results(results_dir)
    assert loaded.load_report.skipped == []
    frame = loaded.frame
    latency = frame[frame.benchmark == "bench_ops.LinearAct.track_latency"]
    assert set(latency.status) == {"ok", "skipped"}
    assert set(frame[frame.benchmark.str.startswith("bench_broken.")].status) == {"failed"}
    case_keys = set(latency["case"])
    assert {Case.from_key(k) for k in case_keys} == set(grid("tiny")["linear_act"])


def test_grid_names_and_errors(monkeypatch):
    assert set(GRIDS) == {"tiny", "quick", "default", "full"}
    for name in GRIDS:
        cases = grid(name)
        assert set(cases) == set(benchmarked_ops()) and all(cases.values())
    monkeypatch.setenv(common.GRID_ENV, "huge")
    with pytest.raises(ValueError, match="FUSED_MLP_GRID='huge' is not a grid"):
        common.grid_name()


def test_default_grid_covers_what_the_issue_asks():
    """Real model shapes at decode and prefill in bf16 and both FP8 forms, with the GELU and SiLU
    of real MLPs, within the GPU budget (tests/test_suite_cost.py): fp16 is the narrow MLP's (it
    compiles and runs as bf16 does); fp32, fp16 linear_act, its other activations and the seed
    GeGLU's projections are in the full grid."""
    cases = grid("default")
    linear = cases["linear_act"]
    assert {c.M for c in linear} == {1, 16, 128, 2048, 8192}
    assert {(c.K, c.N) for c in linear} == {(4096, 14336), (14336, 4096)}
    assert {c.dtype for c in linear} == {"bf16", "fp8", "w8a16"}  # fp8, w8a16: harness/fp8.py
    assert {c.dtype for op_cases in cases.values() for c in op_cases} == {"bf16", "fp16", "fp8", "w8a16"}
    assert {c.activation for c in linear} == {"gelu_tanh"}  # the other activations and fp32: full
    assert {c.activation for c in cases["gated_mlp"]} == {"gelu_tanh", "silu"}  # GeGLU, SwiGLU
    full = grid("full")["linear_act"]
    assert {c.activation for c in full} == {"relu", "gelu", "gelu_tanh", "silu", "none"}
    assert {c.dtype for c in full} >= {"bf16", "fp16", "fp32"}
    gated = {(c.M, c.K, c.N, c.activation) for c in cases["gated_mlp"]}
    assert {(8192, 768, 3072, "gelu_tanh"), (8192, 4096, 14336, "silu"), (16, 4096, 14336, "silu")} <= gated
    narrow = cases["narrow_mlp"]
    assert {c.N for c in narrow} == {32, 64, 128}
    assert {len(c.widths) - 1 for c in narrow} <= set(range(4, 9))
    assert all(2**18 <= c.M <= 2**21 and c.dtype in ("fp16", "bf16") for c in narrow)


class TestMeasuringPass:
    """The per-case measuring pass, called directly (no asv)."""

    def test_skips_with_reasons_on_cpu(self, monkeypatch):
        bench = common._CaseBenchmark()
        small = grid("tiny")["linear_act"][0].key
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        assert "need CUDA (or TRITON_INTERPRET=1" in bench.measure_all(small, "fused")["skip"]
        assert "cublaslt needs a CUDA device" in bench.measure_all(small, "cublaslt")["skip"]
        prefill = next(c for c in grid("default")["linear_act"] if c.M == 8192)
        assert "too large for a CPU run" in bench.measure_all(prefill.key, "eager")["skip"]

    def test_fused_is_gated_under_the_interpreter(self, tmp_path, monkeypatch):
        """TRITON_INTERPRET=1 (conftest) runs the real kernels on the CPU: the pass checks them."""
        bench = bench_ops.GatedMLP()
        key = grid("tiny")["gated_mlp"][0].key
        monkeypatch.setenv(common.BENCH_ENV, r"'fused'\)$")  # fused alone, as `asv run -b` would select
        bench.setup(str(tmp_path), key, "fused")
        assert [p.name for p in tmp_path.iterdir()] == [common._filed_name("GatedMLP", (key, "fused"))]
        assert len(bench.track_latency(str(tmp_path), key, "fused")["samples"]) == bench.interpreter_samples

    def test_the_first_call_is_timed_where_the_gpu_session_asks(self, tmp_path, monkeypatch):
        """tools/gpu_runner/session.sh sets $FUSED_MLP_FIRST_CALLS: each pass files its first call
        (on the GPU the compiles and autotuning) for benchmarks.measured_inputs."""
        from benchmarks.harness import first_calls

        monkeypatch.setenv(first_calls.FIRST_CALLS_ENV, str(tmp_path))
        key = grid("tiny")["linear_act"][0].key
        assert "metrics" in bench_ops.LinearAct().measure_all(key, "eager")
        (record,) = first_calls.collect(tmp_path)
        assert (record["benchmark"], record["case"], record["impl"], record["mode"]) == ("LinearAct", key, "eager",
                                                                                          "forward")

    def test_wrong_result_fails_every_metric_before_timing(self, tmp_path):
        class Wrong(common._CaseBenchmark):
            def prepared_call(self, case, impl, inputs):
                real = super().prepared_call(case, impl, inputs)
                return lambda: real() + 1e-3

        key = grid("tiny")["gated_mlp"][0].key
        filed = Wrong().measure_all(key, "eager")
        assert "computes a wrong result" in filed["failed"] and "metrics" not in filed
        for _ in common.METRICS:  # each metric's process finds the failure filed and fails too
            with pytest.raises(AssertionError, match="computes a wrong result"):
                Wrong().setup(str(tmp_path), key, "eager")

    def test_one_pass_serves_every_metric_and_the_case_s_other_implementations(self, tmp_path, monkeypatch):
        """The first metric's process measures its combination, then files the case's other
        implementations except fused (one CUDA start per case); every later process reads."""
        key = grid("tiny")["narrow_mlp"][0].key
        calls = []
        real = common._CaseBenchmark._measure
        stand_in = {"latency": {"samples": [1e-3], "number": 1}, "peak_memory": 1, "kernels_per_call": 1}

        def measure(self, case, impl, options):  # eager for real; the others stand-ins, to keep this fast
            calls.append(impl)
            return real(self, case, impl, options) if impl == "eager" else stand_in

        monkeypatch.setattr(common._CaseBenchmark, "_measure", measure)
        monkeypatch.chdir(tmp_path)  # asv runs setup_cache in its per-run cache folder
        folder = common._CaseBenchmark().setup_cache()
        assert folder == str(tmp_path / "measurements")
        results = {}
        for metric in ("track_kernels_per_call", "track_latency", "track_peak_memory"):  # asv's order
            bench = bench_ops.NarrowMLP()  # a fresh process each
            bench.setup(folder, key, "eager")
            try:
                results[metric] = getattr(bench, metric)(folder, key, "eager")
            except NotImplementedError as e:
                results[metric] = str(e)
        impls = bench_ops.NarrowMLP.params[1]
        assert calls == ["eager"] + [i for i in impls if i not in ("eager", "fused")]
        out = results["track_latency"]
        assert out["number"] == 1 and len(out["samples"]) == common._CaseBenchmark.samples
        assert all(0 < s < 1 for s in out["samples"])
        assert results["track_peak_memory"] == "peak memory is read from the CUDA allocator"
        compiled = bench_ops.NarrowMLP()
        compiled.setup(folder, key, "compile")  # filed by eager's process
        assert compiled.track_kernels_per_call(folder, key, "compile") == 1 and len(calls) == len(impls) - 1
        bench_ops.NarrowMLP().setup(folder, key, "fused")  # the library under test: its own process
        assert calls[-1] == "fused" and len(calls) == len(impls)

    def test_only_the_implementations_the_run_selects_are_filed(self, tmp_path, monkeypatch):
        """With asv's -b in $FUSED_MLP_BENCH (benchmarks.run sets it), the case's first process
        measures the selected siblings only: a run of one implementation measures one."""
        key = grid("tiny")["narrow_mlp"][0].key
        calls = []
        stand_in = {"latency": {"samples": [1e-3], "number": 1}, "peak_memory": 1, "kernels_per_call": 1}
        monkeypatch.setattr(common._CaseBenchmark, "_measure", lambda self, case, impl, options: calls.append(impl)
                            or stand_in)
        monkeypatch.setenv(common.BENCH_ENV, r"^bench_ops\.NarrowMLP\.track_latency\(.*'(eager|compile)'\)$")
        bench_ops.NarrowMLP().setup(str(tmp_path), key, "eager")
        assert calls == ["eager", "compile"]
        monkeypatch.setenv(common.BENCH_ENV, "bench_ops.LinearAct")  # no NarrowMLP sibling selected
        (tmp_path / "other").mkdir()
        bench_ops.NarrowMLP().setup(str(tmp_path / "other"), key, "fused")
        assert calls == ["eager", "compile", "fused"]

    def test_a_skip_is_filed_for_every_metric(self, tmp_path, monkeypatch):
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        key = grid("tiny")["linear_act"][0].key

        class CublasltOnly(bench_ops.LinearAct):  # no sibling implementations to file
            params = ([key], ["cublaslt"])

        for _ in range(2):
            with pytest.raises(NotImplementedError, match="cublaslt needs a CUDA device"):
                CublasltOnly().setup(str(tmp_path), key, "cublaslt")
        assert len(list(tmp_path.iterdir())) == 1


def test_every_timed_op_has_its_class_written_out_in_bench_ops():
    for op in benchmarked_ops():
        cls = getattr(bench_ops, OPS[op].benchmark_class)
        assert cls.op == op and cls.params == common._CaseBenchmark.grid_params(op)
        assert cls.__doc__.startswith(op)


def _asv_call(name: str, param_idx: int, cache_dir, monkeypatch):
    """One benchmark process as asv_runner makes it: setup_cache's folder first, then the
    params, into setup and the track_ method (what `asv run` does, without the subprocess)."""
    from asv_runner.discovery import get_benchmark_from_name

    monkeypatch.chdir(cache_dir)  # asv runs setup_cache in its per-run cache folder
    bench = get_benchmark_from_name(str(ROOT / "benchmarks"), f"{name}-{param_idx}")
    bench.set_cache(bench.do_setup_cache())
    if bench.do_setup():
        return "skipped"
    try:
        return bench.do_run()
    except NotImplementedError as e:  # asv_runner's SkipNotImplemented is one
        return f"skipped: {e}"


def test_training_classes_run_the_way_asv_calls_them(tmp_path, monkeypatch, suite_module_on_grid):
    """bench_training's classes take asv's setup_cache folder like bench_ops' (a signature
    without it fails every training benchmark in a real run) and share one measuring pass."""
    from benchmarks import bench_training

    params = list(itertools.product(*suite_module_on_grid(bench_training, "tiny").LinearActTraining.params))
    idx = params.index((grid("tiny")["linear_act"][0].key, "eager", "backward"))
    calls = []
    real = common._CaseBenchmark._measure
    stand_in = {"latency": {"samples": [1e-3], "number": 1}, "peak_memory": 1, "kernels_per_call": 1}

    def measure(self, case, impl, options):  # eager for real; its siblings stand-ins, to keep this fast
        calls.append((impl, options["mode"]))
        return real(self, case, impl, options) if impl == "eager" else stand_in

    monkeypatch.setattr(common._CaseBenchmark, "_measure", measure)
    latency = _asv_call("bench_training.LinearActTraining.track_latency", idx, tmp_path, monkeypatch)
    assert latency["number"] == 1 and len(latency["samples"]) == bench_training.LinearActTraining.samples
    assert calls[0] == ("eager", "backward") and all(mode == "backward" for _, mode in calls)
    measured = len(calls)
    memory = _asv_call("bench_training.LinearActTraining.track_peak_memory", idx, tmp_path, monkeypatch)
    assert memory == "skipped: peak memory is read from the CUDA allocator"
    assert len(calls) == measured  # the second metric read what the first filed


def test_hot_classes_run_the_way_asv_calls_them(tmp_path, monkeypatch, capsys, suite_module_on_grid):
    """bench_hot's classes on asv's own setup_cache/setup/track calls: on the tiny grid (CPU)
    each metric's process skips with the reason, from one filed pass."""
    from benchmarks import bench_hot

    suite_module_on_grid(bench_hot, "tiny")
    calls = []
    real = bench_hot._HotBenchmark._measure
    monkeypatch.setattr(bench_hot._HotBenchmark, "_measure", lambda self, *a: calls.append(a[1]) or real(self, *a))
    for op in benchmarked_ops():
        name = f"bench_hot.{OPS[op].benchmark_class}Hot"
        for idx, metric in itertools.product((0, 1), ("track_graph_latency", "track_launch_overhead")):
            assert _asv_call(f"{name}.{metric}", idx, tmp_path, monkeypatch) == "skipped", (name, metric)
            assert bench_hot.NO_CUDA in capsys.readouterr().out  # asv_runner prints the setup's skip
    # fused's first process passes over eager too (its sibling); the other three processes read the files
    assert calls == ["fused", "eager"] * len(benchmarked_ops())
