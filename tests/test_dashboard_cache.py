"""dashboard.cache: parsed result files kept between starts, outside the results folder; only
changed files are parsed again; any trouble with the cache falls back to parsing."""

import json
import os
import shutil

import numpy as np
import pytest

from dashboard import cache as cache_module
from dashboard.data import load_results
from dashboard.model import build_data, results_signature
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture

KEYS = ["machine", "env_name", "commit_hash", "benchmark", "params_key"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("cache") / "results")


@pytest.fixture
def results(pristine, tmp_path):
    return shutil.copytree(pristine.results_dir, tmp_path / "results")


def rows(data):
    frame = data.rows_frame()
    frame = frame.assign(**{k: frame[k].astype(str) for k in KEYS}).sort_values(KEYS).reset_index(drop=True)
    return frame[[*KEYS, "value", "status", "ci_99_a", "ci_99_b", "repeat", "samples"]]


def same(a, b):
    assert len(a) == len(b)
    for col in a.columns:
        if col in ("value", "ci_99_a", "ci_99_b", "repeat"):
            np.testing.assert_array_equal(a[col].to_numpy(dtype=float), b[col].to_numpy(dtype=float))
        else:
            assert a[col].astype(object).tolist() == b[col].astype(object).tolist(), col


def test_a_second_start_parses_nothing_and_loads_the_same(results, tmp_path):
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    signature = results_signature(results)
    cold = build_data(results, cache_dir=tmp_path / "cache")
    warm = build_data(results, cache_dir=tmp_path / "cache")
    plain = build_data(results)  # no cache at all
    assert cold.files_parsed == len(list(results.glob("*/*.json"))) - 2  # all but the machine.json files
    assert warm.files_parsed == 0 and not warm.cache_note
    same(rows(warm), rows(plain))
    same(rows(cold), rows(plain))
    assert {s.path: s.reason for s in warm.report.skipped} == {s.path: s.reason for s in plain.report.skipped}
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before  # nothing written there
    assert results_signature(results) == signature
    assert not any(p.is_relative_to(results) for p in (tmp_path / "cache").rglob("*"))


def test_only_changed_added_or_removed_files_are_parsed_again(results, tmp_path):
    cache = tmp_path / "cache"
    build_data(results, cache_dir=cache)
    files = sorted(p for p in (results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))
    changed, removed = files[3], files[5]
    doc = json.loads(changed.read_text())
    column = doc["result_columns"].index("result")
    name = next(n for n in doc["results"] if n.endswith("track_latency"))
    doc["results"][name][column] = [v * 2 if isinstance(v, float) else v for v in doc["results"][name][column]]
    changed.write_text(json.dumps(doc))
    removed.unlink()
    added = results / MAIN_MACHINE / f"{'a' * 8}-{MAIN_ENV}.json"
    extra = json.loads(files[0].read_text())
    extra["commit_hash"], extra["date"] = "a" * 40, doc["date"] + 1
    added.write_text(json.dumps(extra))
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed == 2  # the changed file and the added one
    same(rows(data), rows(build_data(results)))
    commits = set(data.run(MAIN_MACHINE, MAIN_ENV).commits["commit_hash"])
    assert "a" * 40 in commits and json.loads(files[4].read_text())["commit_hash"] in commits
    assert not any(h.startswith(removed.name[:8]) for h in commits)


def test_segments_are_merged_and_dead_rows_dropped(results, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    sizes = sorted(p.stat().st_size for p in results.glob("*/*.json"))
    monkeypatch.setattr(cache_module, "BATCH_BYTES", 2 * sizes[len(sizes) // 2])  # a few files per segment
    monkeypatch.setattr(cache_module, "MAX_SEGMENTS", 4)
    data = build_data(results, cache_dir=cache)
    manifest = json.loads((cache / next(os.scandir(cache)).name / "manifest.json").read_text())
    assert len(manifest["segments"]) == 2  # the largest, and everything else merged into one
    assert max(len({f["segment"] for f in manifest["files"] if f["segment"] == i}) for i in (0, 1)) == 1
    assert len(list((cache / next(os.scandir(cache)).name).glob("seg-*"))) == 2  # the rest deleted
    same(rows(data), rows(build_data(results)))
    same(rows(build_data(results, cache_dir=cache)), rows(build_data(results)))


def test_a_damaged_or_foreign_cache_is_parsed_again(results, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build_data(results, cache_dir=cache)
    folder = cache / next(os.scandir(cache)).name
    segment = next(folder.glob("seg-*"))
    (segment / "value.npy").write_bytes(b"\x93NUMPY garbage")
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed > 0 and "cache unreadable" in data.cache_note
    same(rows(data), rows(build_data(results)))
    assert build_data(results, cache_dir=cache).files_parsed == 0  # rewritten and good again
    (folder / "manifest.json").write_text("{not json")
    assert build_data(results, cache_dir=cache).files_parsed > 0
    monkeypatch.setattr(cache_module, "parser_fingerprint", lambda: "another-version")
    assert build_data(results, cache_dir=cache).files_parsed > 0  # a cache of another parser is not trusted


def test_an_unwritable_cache_dir_only_costs_the_cache(results, tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    data = build_data(results, cache_dir=blocked)
    assert not data.empty and "could not write the cache" in data.cache_note
    same(rows(data), rows(build_data(results)))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_and_symlinks_out_of_the_results_are_skipped_not_read(results, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"secret": 1}))
    os.symlink(outside, results / MAIN_MACHINE / "leak-virtualenv.json")
    os.mkfifo(results / MAIN_MACHINE / "pipe-virtualenv.json")  # opening it would block forever
    inside = sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))[0]
    os.symlink(inside, results / MAIN_MACHINE / "alias-other.json")
    for _ in range(2):  # parsed, then from the cache: the same reasons
        data = build_data(results, cache_dir=tmp_path / "cache")
        reasons = {os.path.basename(s.path): s.reason for s in data.report.skipped}
        assert "outside" in reasons["leak-virtualenv.json"] and "secret" not in str(data.report.lines())
        assert reasons["pipe-virtualenv.json"].startswith("not a regular file")
        assert "alias-other.json" not in reasons  # a link inside the results folder is read
    loader = {os.path.basename(s.path): s.reason for s in load_results(results).load_report.skipped}
    assert {k: reasons[k] for k in loader} == loader  # the gate's loader says the same
