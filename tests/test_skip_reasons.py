"""Why a value is NaN or null, kept beside asv's results (benchmarks/skip_reasons.py): filed by
the measuring pass per combination and metric, merged per machine and commit by benchmarks.run."""

import json

import pytest

from benchmarks import bench_ops, common, skip_reasons
from workload.grids import OUTCOMES_ENV, grid

KEY = grid("tiny")["linear_act"][0].key


def _by_benchmark(entries):
    return {(e["benchmark"], e["params"]["impl"]): e for e in entries}


def test_the_measuring_pass_files_every_skip_and_failure_with_its_reason(tmp_path, monkeypatch):
    out = tmp_path / "outcomes"
    monkeypatch.setenv(OUTCOMES_ENV, str(out))
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # fused skips: no CUDA

    class Only(bench_ops.LinearAct):  # the implementations of this test, no more
        params = ([KEY], ["fused", "eager"])

    class Wrong(bench_ops.LinearAct):
        params = ([KEY], ["eager"])

        def prepared_call(self, case, impl, inputs):
            real = super().prepared_call(case, impl, inputs)
            return lambda: real() + 1.0

    (tmp_path / "m1").mkdir()
    (tmp_path / "m2").mkdir()
    with pytest.raises(NotImplementedError):
        Only().setup(str(tmp_path / "m1"), KEY, "fused")  # files eager too, its sibling
    with pytest.raises(AssertionError):
        Wrong().setup(str(tmp_path / "m2"), KEY, "eager")
    entries, measured = skip_reasons.collect(out)
    found = _by_benchmark(entries)
    prefix = "test_skip_reasons"
    for metric in common.METRICS:
        e = found[(f"{prefix}.Only.track_{metric}", "fused")]
        assert e["status"] == "skipped" and "need CUDA" in e["reason"] and e["params"] == {"case": KEY, "impl": "fused"}
        w = found[(f"{prefix}.Wrong.track_{metric}", "eager")]
        assert w["status"] == "failed" and "computes a wrong result" in w["reason"]
    # eager measured its latency: no entry for it; its GPU-only metrics skipped, with the reason
    assert (f"{prefix}.Only.track_latency", "eager") not in found
    assert found[(f"{prefix}.Only.track_peak_memory", "eager")]["reason"] == "peak memory is read from the CUDA allocator"
    assert (f"{prefix}.Only.track_latency", json.dumps({"case": KEY, "impl": "eager"}, sort_keys=True)) in measured


def test_merge_keeps_what_a_run_did_not_measure_and_replaces_what_it_did(tmp_path):
    a = skip_reasons.entry("bench_ops.LinearAct.track_latency", {"case": KEY, "impl": "cublaslt"}, "skipped", "no")
    b = skip_reasons.entry("bench_ops.GatedMLP.track_latency", {"case": "g", "impl": "fused"}, "failed", "boom")
    target = skip_reasons.merge(tmp_path, "m", "c" * 40, [a, b], set())
    assert target == tmp_path / "reasons" / "m" / f"{'c' * 40}.reasons"
    again = {skip_reasons._key(b)}  # measured again, fine this time: its old failure goes
    doc = skip_reasons.read(skip_reasons.merge(tmp_path, "m", "c" * 40, [], again))
    assert doc["version"] == 1 and doc["machine"] == "m" and doc["entries"] == [a]
    with pytest.raises(ValueError, match="status"):
        skip_reasons.entry("x", {}, "slow", "why")
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ValueError, match="not a reasons file"):
        skip_reasons.read(tmp_path / "bad.json")


def test_nothing_is_filed_without_the_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(OUTCOMES_ENV, raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "0")

    class Only(bench_ops.LinearAct):
        params = ([KEY], ["cublaslt"])

    with pytest.raises(NotImplementedError):
        Only().setup(str(tmp_path), KEY, "cublaslt")
    assert [p.name for p in tmp_path.iterdir()] != [] and not (tmp_path / "outcomes").exists()


def test_a_whole_benchmark_reason_replaces_and_is_replaced_as_a_run_measures_again(tmp_path):
    every = skip_reasons.EVERY_COMBINATION
    one = skip_reasons.entry("b.track_x", {"n": 16}, "failed", "boom")
    other = skip_reasons.entry("b.track_y", {"n": 16}, "skipped", "kept")
    skip_reasons.merge(tmp_path, "m", "c" * 40, [one, other], set())
    whole = skip_reasons.entry("b.track_x", every, "skipped", "no sm_100 at this commit")
    doc = skip_reasons.read(skip_reasons.merge(tmp_path, "m", "c" * 40, [whole], {skip_reasons._key(whole)}))
    assert doc["entries"] == [whole, other]  # b.track_x measured again as a whole: its old entry goes
    doc = skip_reasons.read(skip_reasons.merge(tmp_path, "m", "c" * 40, [], {skip_reasons._key(one)}))
    assert doc["entries"] == [other]  # one combination measured again: the whole reason no longer holds
    with pytest.raises(ValueError, match="params"):
        skip_reasons.entry("b.track_x", "n=16", "skipped", "not a combination")


def _kernel_resources_outcomes(tmp_path, monkeypatch, compile_check):
    from benchmarks import bench_compile

    out = tmp_path / "outcomes"
    monkeypatch.setenv(OUTCOMES_ENV, str(out))
    monkeypatch.setenv("FUSED_MLP_COMPILE_ARCH", "sm_100")
    monkeypatch.setattr(bench_compile, "compile_check", compile_check)
    return bench_compile, out


def test_kernel_resources_files_one_reason_per_metric_when_the_commit_lacks_the_architecture(tmp_path, monkeypatch):
    """An older commit's library does not know sm_100: every value is skipped, and why is filed
    once per metric for every combination (not ~1,000 entries), so the pages can say it."""
    class OlderLibrary:
        INTERPRETER, ARCHS = False, ("sm_90", "sm_80")

    bench_compile, out = _kernel_resources_outcomes(tmp_path, monkeypatch, lambda: (OlderLibrary, ""))
    cache = bench_compile.KernelResources().setup_cache()
    assert "does not know sm_100" in cache["skip"]
    entries, measured = skip_reasons.collect(out)
    assert sorted(e["benchmark"] for e in entries) == sorted(f"bench_compile.KernelResources.track_{m}"
                                                             for m in bench_compile.METRICS)
    assert all(e["params"] == "*" and e["status"] == "skipped" and e["reason"] == cache["skip"] for e in entries)
    assert measured == {skip_reasons._key(e) for e in entries}
    assert {f"track_{m}" for m in bench_compile.METRICS} == {
        n for n in vars(bench_compile.KernelResources) if n.startswith("track_")}


def test_kernel_resources_files_a_failure_of_every_value_when_the_library_does_not_import(tmp_path, monkeypatch):
    def broken():
        raise ImportError("fused_mlp at this commit is broken")

    bench_compile, out = _kernel_resources_outcomes(tmp_path, monkeypatch, broken)
    with pytest.raises(ImportError):
        bench_compile.KernelResources().setup_cache()
    entries, _ = skip_reasons.collect(out)
    assert len(entries) == 4 and all(e["status"] == "failed" and "is broken" in e["reason"] for e in entries)


def test_a_reasons_file_written_under_the_old_name_is_read_and_replaced_by_the_next_merge(tmp_path):
    """Reasons files were <commit>.json, which made `asv publish` warn once per file (a folder
    of .json without machine.json): now <commit>.reasons; an old one is read, then moved over."""
    from dashboard.data import na_reasons

    old = skip_reasons.entry("b.track_x", {"n": 16}, "skipped", "kept from the old file")
    legacy = skip_reasons.path(tmp_path, "m", "c" * 40, skip_reasons.LEGACY_SUFFIX)
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"version": 1, "machine": "m", "commit": "c" * 40, "entries": [old]}))
    key = na_reasons.series_key("b.track_x", ["n"], ["16"])
    assert na_reasons.reasons_at(tmp_path, "m", "c" * 40).at(key, "skipped") == ("skipped", "kept from the old file")
    new = skip_reasons.entry("b.track_y", {"n": 16}, "failed", "new")
    target = skip_reasons.merge(tmp_path, "m", "c" * 40, [new], set())
    assert target.name == f"{'c' * 40}.reasons" and not legacy.exists()
    assert skip_reasons.read(target)["entries"] == [old, new]
