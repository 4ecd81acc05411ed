"""Static compile metrics in the dashboard (benchmarks/bench_compile.py's series): their own
Kernels page with a per-commit table and history, never mixed into the timing pages; a folder
that holds nothing else opens on them."""

import numpy as np
import pytest

from dashboard.data import static_metrics
from dashboard.app import render_page
from dashboard.data.dashboard_data import STATIC, SUITE
from dashboard.store.load_data import build_data
from dashboard.store.model import ResultsStore
from dashboard.pages import discover_pages, kernels
from tests.asv_fixtures import SeriesSpec, write_history
from tests.suite_fixtures import write_dashboard_fixture
from tests.test_dashboard import texts

MACHINE, ENV = "compile-sm_90-triton-3.6.0", "existing-py_opt_triton-3.6.0_bin_python"
GROWN, STEADY, DROPPED = "linear_act/tile 128x128x64 w8 s3", "linear_act/tile 64x64x32 w4 s3", "narrow_mlp/width=64 32 w4 s2"
STEP_AT, N_COMMITS = 3, 5
BASES = {  # (kernel_config, dtype) -> registers, spill bytes, shared bytes, SASS instructions
    (GROWN, "bf16"): (160, 0, 99328, 1100),
    (STEADY, "bf16"): (80, 0, 41984, 700),
    (DROPPED, "bf16"): (66, 0, 13312, 3000),
}


def _static_series(dropped_from: int | None = None) -> list[SeriesSpec]:
    """Exact values (no noise); the GROWN config gains 12.5 % registers at STEP_AT; a config
    with skip_prob 1 is 'not offered' at every commit."""
    out = []
    for m, column in zip(static_metrics.METRICS, range(4)):
        unit = {"registers": "registers", "B": "bytes", "KiB": "bytes", "instructions": "instructions"}[m.shown_unit]
        for (config, dtype), values in BASES.items():
            steps = ((STEP_AT, 0.125),) if config == GROWN and m.key == "track_registers" else ()
            out.append(SeriesSpec(static_metrics.BENCHMARK_PREFIX + m.key, (config, dtype), ("kernel_config", "dtype"),
                                  unit, base=float(values[column]), run_noise=0.0, sample_noise=0.0,
                                  steps=steps))
        out.append(SeriesSpec(static_metrics.BENCHMARK_PREFIX + m.key, (STEADY, "fp32"), ("kernel_config", "dtype"),
                              unit, base=1.0, skip_prob=1.0))
    return out


def _write_static(root, **kwargs):
    return write_history(root, _static_series(), N_COMMITS, seed=3, machine=MACHINE, env_name=ENV, n_samples=1,
                         warmup_outlier_prob=0.0, machine_params={"triton": "3.6.0", "gpu": "none"}, **kwargs)


@pytest.fixture(scope="module")
def static_only(tmp_path_factory):
    root = tmp_path_factory.mktemp("static") / "results"
    return root, _write_static(root)


def test_a_folder_of_static_metrics_only_loads_as_static_and_opens_on_them(static_only):
    root, history = static_only
    data = build_data(root)
    assert data.mode == STATIC and not data.runs
    run = data.static_run(None)
    assert run.machine == MACHINE and len(run.commits) == N_COMMITS
    store = ResultsStore(root, detect_in_background=False)
    pages = discover_pages()
    overview = texts(render_page(store, pages, "/", ""))
    assert "No timings in these results yet" in overview and "Static compile metrics, not timings" in overview
    for path in ("/trends", "/compare", "/roofline"):
        text = texts(render_page(store, pages, path, ""))
        assert "No timings in these results yet" in text and "Could not build" not in text, path
        assert "24 series of 4 benchmarks, 5 commits on 1 machine" in text, path  # asv stores the 3 x 2 grid
    store.close()


def test_the_table_shows_each_config_at_a_commit_with_its_change_since_the_one_before(static_only):
    root, history = static_only
    data = build_data(root)
    step = history.commits[STEP_AT]
    records, _ = kernels.update_table(data, MACHINE, step, kernels.ALL, kernels.ALL, [])
    by_config = {(r["config"], r["dtype"]): r for r in records}
    # the always-skipped fp32 config is not offered: not a row at all
    assert set(by_config) == {(c.partition(" ")[2], d) for c, d in BASES}
    grown = by_config[("128x128x64 w8 s3", "bf16")]
    assert grown["kernel"] == "linear_act" and grown["variant"] == "tile"
    assert grown["registers"] == pytest.approx(180.0) and grown["registers_change"] == pytest.approx(20.0)
    assert grown["shared_bytes"] == pytest.approx(97.0) and grown["shared_bytes_change"] == 0  # KiB
    steady = by_config[("64x64x32 w4 s3", "bf16")]
    assert steady["registers_change"] == 0 and steady["note"] == ""
    only_changed, summary = kernels.update_table(data, MACHINE, step, kernels.ALL, kernels.ALL, ["only"])
    assert [r["config"] for r in only_changed] == ["128x128x64 w8 s3"]
    assert "1 value(s) up" in texts(summary)
    first, summary = kernels.update_table(data, MACHINE, history.commits[0], kernels.ALL, kernels.ALL, ["only"])
    assert first == [] and "the first commit of this history" in texts(summary)
    narrow, _ = kernels.update_table(data, MACHINE, step, "narrow_mlp/width=64", "bf16", [])
    assert [(r["kernel"], r["variant"], r["config"]) for r in narrow] == [("narrow_mlp", "width=64", "32 w4 s2")]


def test_the_table_says_why_a_commits_configs_are_n_a_from_the_reasons_bench_compile_filed(static_only):
    """bench_compile files one whole-benchmark reason per metric (benchmarks/skip_reasons.py):
    the Kernels page says it under the table, for every skipped value it covers."""
    from benchmarks import bench_compile, skip_reasons

    root, history = static_only
    commit = history.commits[STEP_AT]
    why = bench_compile.NOT_OFFERED.format(arch="sm_90")
    entries = [skip_reasons.entry(f"{bench_compile.BENCHMARK}.track_{m}", skip_reasons.EVERY_COMBINATION, "skipped", why)
               for m in bench_compile.METRICS]
    target = skip_reasons.merge(root, MACHINE, commit, entries, set())
    try:
        data = build_data(root)
        _, summary = kernels.update_table(data, MACHINE, commit, kernels.ALL, kernels.ALL, [])
        skipped = int((data.static_run(MACHINE).at_commit(commit, samples=False)["status"] == "skipped").sum())
        line = " ".join(texts(summary).split())
        assert skipped >= 4 and f"Why n/a at {commit[:8]}: {skipped} series skipped or failed — {skipped} × {why}" in line
        _, bf16 = kernels.update_table(data, MACHINE, commit, kernels.ALL, "bf16", [])  # the line follows the filters:
        assert "Why n/a" not in texts(bf16)  # every skipped value is an fp32 one
        _, before = kernels.update_table(build_data(root), MACHINE, history.commits[0], kernels.ALL, kernels.ALL, [])
        assert "no reason recorded" in texts(before)  # nothing filed at that commit
    finally:
        target.unlink()


def test_the_history_draws_each_config_with_its_step(static_only):
    root, history = static_only
    data = build_data(root)
    figure, note = kernels.update_figure(data, MACHINE, history.commits[-1], "linear_act/tile", "bf16",
                                         "track_registers")
    lines = {t["name"]: t for t in figure["data"] if t.get("mode", "").startswith("lines")}
    assert note == "" and set(lines) == {f"{GROWN} bf16", f"{STEADY} bf16"}
    grown = np.asarray(lines[f"{GROWN} bf16"]["y"], dtype=float)
    assert list(grown) == [160.0] * STEP_AT + [180.0] * (N_COMMITS - STEP_AT)
    smem, _ = kernels.update_figure(data, MACHINE, None, kernels.ALL, kernels.ALL, "track_shared_memory")
    assert "KiB" in str(smem["layout"]["yaxis"]["title"])


def test_a_bad_link_on_the_kernels_page_says_what_it_shows(static_only):
    root, _ = static_only
    store = ResultsStore(root, detect_in_background=False)
    text = texts(render_page(store, discover_pages(), "/kernels", "?machine=nosuch&kernel=bogus&commit=deadbeef"))
    assert "This link asks for what these results do not have" in text
    assert "machine 'nosuch'" in text and "kernel 'bogus'" in text and "commit 'deadbeef'" in text
    store.close()


def test_beside_timings_the_static_series_stay_off_the_timing_pages(tmp_path):
    root = tmp_path / "results"
    write_dashboard_fixture(root)
    _write_static(root, merge_benchmarks=True)
    data = build_data(root)
    assert data.mode == SUITE
    assert (MACHINE, ENV) in data.static_runs and (MACHINE, ENV) not in data.runs
    for run in data.runs.values():
        assert not static_metrics.is_static(run.series["benchmark"]).any()
    assert not static_metrics.is_static(data.rows_frame(samples=False)["benchmark"]).any()
    store = ResultsStore(root, detect_in_background=False)
    pages = discover_pages()
    assert "No timings" not in texts(render_page(store, pages, "/", ""))
    kernels_text = texts(render_page(store, pages, "/kernels", ""))
    assert "Static compile metrics, not timings" in kernels_text and "Could not build" not in kernels_text
    # leaving Kernels carries its machine and dtype=all to the timing pages: no false "this link asks for" notice
    for path in ("/", "/trends", "/compare", "/roofline"):
        shown = render_page(store, pages, path, f"?machine={MACHINE}&dtype=all")
        assert "asks for what these results do not have" not in texts(shown), path
    assert "asks for what" in texts(render_page(store, pages, "/trends", "?machine=nosuch"))  # a real miss still is
    store.close()


def test_a_kernel_config_label_of_another_shape_is_kept_whole():
    assert static_metrics.split_kernel_config("gated_up/tile 16x64x64 w4 s3") == ("gated_up", "tile", "16x64x64 w4 s3")
    assert static_metrics.split_kernel_config("(none)") == ("", "", "(none)")


def test_the_repositorys_own_results_hold_a_static_history_of_real_commits():
    """results/ in this repository: the static metrics of at least 3 commits of main, which the
    README's first dashboard command opens on."""
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    data = build_data(repo / "results")
    run = data.static_run(None)
    assert run is not None and len(run.commits) >= 3
    for commit in run.commits["commit_hash"]:
        done = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", commit, "HEAD"])
        if done.returncode == 128:  # not a git checkout of the repository (an exported tree)
            pytest.skip("no git history here to check the commits against")
        assert done.returncode == 0, f"{commit} is not a commit of this history"
    records, _ = kernels.update_table(data, run.machine, run.commits["commit_hash"].iloc[-1], kernels.ALL,
                                      kernels.ALL, [])
    measured = [r for r in records if r["spill_bytes"] is not None]
    assert measured and all(r["spill_bytes"] == 0 for r in measured)
    # a row without a value says why: it did not compile, or the commit no longer offers it (a
    # config replaced because it spilled, as on sm_100 at 4ce92cb)
    assert all(r["note"] in ("did not compile", "gone at this commit") for r in records if r["spill_bytes"] is None)


def test_the_start_up_line_counts_the_static_metrics_too(static_only):
    from dashboard.__main__ import loaded_line

    data = build_data(static_only[0])
    n = sum(len(run.series) for run in data.static_runs.values())
    line = loaded_line(data)
    assert n > 0 and f"{n:,} series" in line and "static compile metrics" in line and "0 series" not in line


def test_a_static_finding_links_to_its_config_on_the_kernels_page(tmp_path):
    """The inbox's link for a kernel config's change opens the Kernels page narrowed to that
    kernel, dtype and metric, only what changed, changed rows first (once it opened unfiltered)."""
    import dataclasses

    from dashboard.store.detection import detect_in_worker
    from dashboard.store.detection import FindingsState
    from dashboard.pages import regressions as inbox_page
    from dashboard.data.urlstate import Query
    from tests.test_dashboard import _walk

    at, n = 7, 10  # the detector wants a few commits of history before a change
    series = [dataclasses.replace(spec, steps=((at, 0.125),) if spec.steps else ()) for spec in _static_series()]
    history = write_history(tmp_path / "results", series, n, seed=3, machine=MACHINE, env_name=ENV, n_samples=1,
                            warmup_outlier_prob=0.0, machine_params={"triton": "3.6.0", "gpu": "none"})
    data = build_data(tmp_path / "results")
    found = [f for f in detect_in_worker(str(tmp_path / "results"), None)[0] if f.commit_hash == history.commits[at]]
    assert found and all(GROWN in f.params for f in found)
    children, _ = inbox_page.inbox(data, FindingsState("done", 0.0, found, 1.0), None, "all", [])
    href = next(c.href for c in _walk(children) if getattr(c, "href", "").startswith("/kernels"))
    q = Query(href.split("?", 1)[1])
    assert (q.one("kernel"), q.one("dtype"), q.one("metric"), q.many("changed"), q.one("commit")) == (
        "linear_act/tile", "bf16", "track_registers", ["only"], history.commits[at])
    rows, _ = kernels.update_table(data, MACHINE, q.one("commit"), q.one("kernel"), q.one("dtype"), q.many("changed"))
    assert [r["config"] for r in rows] == ["128x128x64 w8 s3"]
