"""An asv history of ANOTHER project (not this suite's shape), for the dashboard's generic mode.

Built on tests/asv_fixtures.write_history (asv's exact format): benchmarks with their own
parameters (no ``case`` / ``impl``), units asv knows (seconds, bytes) and one it does not
("MB/s", higher is better), a benchmark without parameters, a tuple-valued parameter (its repr
has a comma), one benchmark that fails at every commit and one that is always skipped, a
planted +25 % step in a time and a -20 % one in a throughput (both regressions), and no device
ceilings. Optionally (``mixed_units``) a ``track_`` benchmark without a unit whose parameter picks
what it returns (GB, seconds, a count), as another project's profile benchmarks do, and
(``absent``) commits whose results lack a benchmark altogether (it did not run there, not even
as a failure).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.asv_fixtures import History, SeriesSpec, params_key, write_history

MACHINE, ENV = "ci-box", "virtualenv-py3.11"
READ = "bench_io.Reader.time_read"
THROUGHPUT = "bench_io.Reader.track_throughput"
PEAKMEM = "bench_mem.peakmem_load"
IMPORT = "bench_misc.time_import"
BROKEN = "bench_misc.time_broken"
OPTIONAL = "bench_misc.time_optional"
GRID = "bench_grid.Grid.time_solve"
MIXED = "bench_prof.Profile.track_stat"  # asv's placeholder unit "unit": one per parameter value really
MIXED_STATS = {"peak_gb": 2.5, "seconds": 0.03, "calls": 1200.0}
STEP_METRICS = ("bench_prof.Solver.track_step", "bench_prof.Solver.track_step.forward",
                "bench_prof.Solver.track_step.forward.solve")  # a metric and its sub-metrics
STEP_AT = 20


@dataclass
class GenericFixture:
    results_dir: Path
    history: History
    stepped: tuple[str, str]  # (benchmark, params_key) with a planted +25 % step
    dropped: tuple[str, str]  # (benchmark, params_key) of a throughput with a planted -20 % step
    step_commit: str | None


def write_generic_history(results_dir: str | Path, n_commits: int = 30, seed: int = 11,
                          failing_from: int | None = None, mixed_units: bool = False,
                          absent: tuple[str, range] | None = None, sub_metrics: bool = False) -> GenericFixture:
    """``n_commits`` commits; the steps are planted at commit STEP_AT when the history is long
    enough to show them (else step_commit is None). ``failing_from``: READ at size 1024, json
    fails from that commit on (a benchmark that starts failing). ``mixed_units``: add MIXED.
    ``absent``: (benchmark, commit indexes) whose result files leave that benchmark out.
    ``sub_metrics``: STEP_METRICS, all three +30 % at STEP_AT (a step and the parts it is made of)."""
    at = STEP_AT if n_commits > STEP_AT + 3 else None
    series = [SeriesSpec(READ, (size, kind), ("size", "kind"), "seconds", base=2e-4 * size / 1024,
                         steps=((at, 0.25),) if (size, kind) == (65536, "csv") and at else (),
                         status_steps=((failing_from, "failed"),) if failing_from is not None
                         and (size, kind) == (1024, "json") else ())
              for size in (1024, 65536) for kind in ("csv", "parquet", "json")]
    series += [SeriesSpec(THROUGHPUT, (kind,), ("kind",), "MB/s", higher_is_better=True, base=800.0,
                          steps=((at, -0.2),) if kind == "parquet" and at else ())
               for kind in ("csv", "parquet")]
    series += [SeriesSpec(PEAKMEM, (), (), "bytes", base=3.2e8, run_noise=0.0, sample_noise=0.0),
               SeriesSpec(IMPORT, (), (), "seconds", base=0.12),
               SeriesSpec(BROKEN, (), (), "seconds", base=1.0, fail_prob=1.0),
               SeriesSpec(OPTIONAL, (), (), "seconds", base=1.0, skip_prob=1.0)]
    series += [SeriesSpec(GRID, (shape, method), ("shape", "method"), "seconds", base=1e-3)
               for shape in ((64, 64), (256, 256)) for method in ("lu", "qr")]
    if sub_metrics:
        series += [SeriesSpec(name, (16,), ("m",), "seconds", base=2e-3, run_noise=0.01,
                              steps=((at, 0.3),) if at else ()) for name in STEP_METRICS]
    if mixed_units:
        series += [SeriesSpec(MIXED, (stat,), ("stat",), "unit", base=base) for stat, base in MIXED_STATS.items()]
    history = write_history(results_dir, series, n_commits, seed=seed, machine=MACHINE, env_name=ENV,
                            n_samples=8, machine_params={"cpu": "Example CPU", "os": "Linux"})
    if absent is not None:
        _leave_out(history, *absent)
    stepped = (READ, params_key(("size", "kind"), (repr(65536), repr("csv"))))
    dropped = (THROUGHPUT, params_key(("kind",), (repr("parquet"),)))
    return GenericFixture(Path(results_dir), history, stepped, dropped, history.commits[at] if at else None)


def _leave_out(history: History, benchmark: str, commits: range) -> None:
    """Drop ``benchmark`` from the result files of those commits (asv writes no entry for a
    benchmark it did not run, e.g. one the suite at that commit could not import)."""
    for i in commits:
        for path in (history.results_dir / history.machine).glob(f"{history.commits[i][:8]}-*.json"):
            doc = json.loads(path.read_text())
            doc["results"].pop(benchmark, None)
            path.write_text(json.dumps(doc))


def write_run_notes(history: History, reasons: dict[int, list[dict]], states: dict[int, tuple[dict, dict]]) -> None:
    """What benchmarks.run keeps beside asv's results: why values are n/a (``reasons``: commit
    index -> benchmarks.skip_reasons entries) and the runner's state (``states``: commit index ->
    (start, end) snapshots, as benchmarks/harness/runner_state.py writes them)."""
    from benchmarks import skip_reasons

    for i, entries in reasons.items():
        skip_reasons.merge(history.results_dir, history.machine, history.commits[i], entries, set())
    folder = history.results_dir / history.machine / "runner-state"
    for i, (start, end) in states.items():
        folder.mkdir(exist_ok=True)
        (folder / f"{history.commits[i][:8]}-{history.env_name}.json").write_text(json.dumps({"start": start,
                                                                                               "end": end}))


def snapshot(torch: str = "2.11.0", power_violation_ns: int = 0) -> dict:
    """A runner-state snapshot with the keys the dashboard compares (software, throttle counters)."""
    return {"recorded": True, "software": {"driver": "550.54.15", "torch": torch, "triton": "3.6.0",
                                           "liger": "0.6.1"},
            "gpus": [{"name": "NVIDIA H200", "power_violation_ns": power_violation_ns, "thermal_violation_ns": 0}]}
