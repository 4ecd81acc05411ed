"""The detector over many series in worker processes (regressions.findings, the gate's CLI:
every core): the same findings, in the same order, as in one process."""

from asv_results.loading import load_results
from regressions import find_changes, findings
from tests.asv_fixtures import SeriesSpec, write_history

BENCH = "bench_ops.LinearAct.track_latency"


def test_the_detector_in_worker_processes_finds_what_one_process_finds(tmp_path, monkeypatch):
    series = [SeriesSpec(BENCH, (f"linear_act M={16 * (i + 1)} K=64 N=64 bf16 relu", "fused"), ("case", "impl"),
                         steps=((25, 0.2 * (i % 3)),) if i % 3 else (), run_noise=0.01) for i in range(24)]
    frame = load_results(write_history(tmp_path / "results", series, 40, seed=5, n_samples=10).results_dir).frame
    alone = find_changes(frame)
    assert len({(f.params, f.commit_hash) for f in alone}) >= 16  # the 16 stepped series, at least

    pools = []

    def counted(work, chunks, jobs, *args):
        pools.append((len(chunks), jobs))
        return findings_run_chunks(work, chunks, jobs, *args)

    findings_run_chunks = findings.run_chunks
    monkeypatch.setattr(findings, "PARALLEL_MIN_SERIES", 1)  # a test-sized frame through the pool
    monkeypatch.setattr(findings, "SERIES_PER_TASK", 5)
    monkeypatch.setattr(findings, "run_chunks", counted)
    same = [repr(f) for f in alone]  # repr: a NaN field (p_value) reads the same on both sides
    assert [repr(f) for f in find_changes(frame, jobs=2)] == same
    assert pools == [(5, 2)]
    assert [repr(f) for f in find_changes(frame, jobs=1)] == same and pools == [(5, 2)]  # one process: no pool
