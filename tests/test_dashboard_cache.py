"""asv_results.cache: parsed result files kept between starts, outside the results folder; only
changed files are parsed again; any trouble with the cache falls back to parsing."""

import json
import os
import shutil

import numpy as np
import pytest

from asv_results import cache as cache_module
from asv_results.loading import load_results
from dashboard.store.load_data import build_data, results_signature
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture, write_scale_history

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


def _manifest(cache):
    return json.loads((cache / next(os.scandir(cache)).name / "manifest.json").read_text())


def test_full_batches_stay_apart_small_later_segments_are_merged_and_dead_rows_dropped(results, tmp_path,
                                                                                       monkeypatch):
    cache = tmp_path / "cache"
    sizes = sorted(p.stat().st_size for p in results.glob("*/*.json"))
    monkeypatch.setattr(cache_module, "BATCH_BYTES", 8 * sizes[len(sizes) // 2])  # about 8 files per segment
    monkeypatch.setattr(cache_module, "MAX_SEGMENTS", 4)
    build_data(results, cache_dir=cache)
    first = _manifest(cache)["segments"]
    # a first parse's full batches are never merged: that would hold every row in memory at once
    assert len(first) > 4 and len({s["name"] for s in first}) == len(first)
    files = sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))
    doc = json.loads(files[0].read_text())
    for k, hash_ in enumerate(("a" * 40, "b" * 40)):  # two later starts, one new file each: two small segments
        doc["commit_hash"], doc["date"] = hash_, doc["date"] + 1
        (results / MAIN_MACHINE / f"{hash_[:8]}-{MAIN_ENV}.json").write_text(json.dumps(doc))
        data = build_data(results, cache_dir=cache)
        assert data.files_parsed == 1
    after = _manifest(cache)
    kept = {s["name"] for s in after["segments"]}
    assert {s["name"] for s in first} <= kept and len(kept) == len(first) + 1  # the two small ones merged into one
    assert len(list((cache / next(os.scandir(cache)).name).glob("seg-*"))) == len(kept)  # the rest deleted
    same(rows(data), rows(build_data(results)))
    same(rows(build_data(results, cache_dir=cache)), rows(build_data(results)))
    for old in files[:-2]:  # most of the first segments' files removed: their live rows are rewritten
        old.unlink()
    same(rows(build_data(results, cache_dir=cache)), rows(build_data(results)))
    assert len(_manifest(cache)["segments"]) < len(kept)


def test_a_damaged_or_foreign_cache_is_parsed_again(results, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build_data(results, cache_dir=cache)
    folder = cache / next(os.scandir(cache)).name
    segment = next(folder.glob("seg-*"))
    (segment / "value.npy").write_bytes(b"\x93NUMPY garbage")
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed > 0 and "cache not used" in data.cache_note and "rebuilt" in data.cache_note
    same(rows(data), rows(build_data(results)))
    assert build_data(results, cache_dir=cache).files_parsed == 0  # rewritten and good again
    (folder / "manifest.json").write_text("{not json")
    assert build_data(results, cache_dir=cache).files_parsed > 0
    monkeypatch.setattr(cache_module, "parser_fingerprint", lambda: "another-version")
    assert build_data(results, cache_dir=cache).files_parsed > 0  # a cache of another parser is not trusted


def _rewrite_keeping_size_and_mtime(path, change) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_cache_rewritten_with_the_same_size_and_mtime_is_not_trusted(results, tmp_path):
    """Issue 31's probe: other values in a segment, or another count in the manifest, written
    over the cache with its size and modification time kept, are never served."""
    cache = tmp_path / "cache"
    build_data(results, cache_dir=cache)
    folder = cache / next(os.scandir(cache)).name
    values = next(folder.glob("seg-*")) / "value.npy"
    stored = np.load(values)
    header = len(values.read_bytes()) - stored.nbytes

    def doubled(data):  # every value twice as large: a valid array of the same length
        data[header:] = (np.frombuffer(bytes(data[header:]), dtype=stored.dtype) * 2).tobytes()

    _rewrite_keeping_size_and_mtime(values, doubled)
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed > 0 and "cache not used" in data.cache_note
    same(rows(data), rows(build_data(results)))
    manifest = folder / "manifest.json"
    digit = manifest.read_bytes().index(b'"rows": ') + len(b'"rows": ')
    _rewrite_keeping_size_and_mtime(manifest, lambda d: d.__setitem__(digit, ord("1") if d[digit] != ord("1") else ord("2")))
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed > 0 and "cache not used" in data.cache_note
    same(rows(data), rows(build_data(results)))


def test_an_unwritable_cache_dir_only_costs_the_cache(results, tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    data = build_data(results, cache_dir=blocked)
    assert not data.empty and "could not write the cache" in data.cache_note
    same(rows(data), rows(build_data(results)))


@pytest.mark.parametrize("damage", ["past-the-end", "negative-start", "bad-length"])
def test_rows_whose_samples_lie_outside_their_segment_are_noticed_and_rebuilt(results, tmp_path, monkeypatch, damage):
    # written wrong by this module itself, so every file's identity is the one recorded: only the
    # check of the samples' bounds at the next start can notice
    plain = rows(build_data(results))
    written = cache_module._samples_by_series

    def wrong(arrays, series):
        arrays = written(arrays, series)
        start, length = arrays["sample_start"], arrays["sample_length"]
        row = np.flatnonzero(length > 0)[-1]  # a row with samples
        if damage == "past-the-end":
            start[row] = len(arrays["samples"]) - length[row] + 1
        elif damage == "negative-start":
            start[row] = -1
        else:
            length[row] = -2
        return arrays

    monkeypatch.setattr(cache_module, "_samples_by_series", wrong)
    build_data(results, cache_dir=tmp_path / "cache")
    monkeypatch.undo()
    data = build_data(results, cache_dir=tmp_path / "cache")
    assert "samples lie outside" in data.cache_note and data.files_parsed > 0, data.cache_note
    same(rows(data), plain)


def _batch(files, lengths, blocks):
    """A batch as _segment_from_parsed hands it over: per-file samples (random), per-row lengths
    (-1: no samples) for every file, each file's (first series code, rows) blocks."""
    rng = np.random.default_rng(len(lengths))
    per_file = [rng.random(int(np.maximum(lengths[f], 0).sum())) for f in range(files)]
    return per_file, np.concatenate(lengths).astype(np.int64), blocks


def _gathered(per_file, lengths, blocks):
    series = np.concatenate([np.arange(a, a + n) for file in blocks for a, n in file])
    return cache_module._laid_out_by_gathering(np.concatenate(per_file), lengths, series)


@pytest.mark.parametrize("row_lengths", [[10, -1, 10, 0, 10], [3, 3, 3, 3, 3], [-1, -1, 0, -1, -1]])
def test_a_runners_batch_is_transposed_into_the_layout_the_gather_gives(row_lengths):
    files = 7
    per_file, lengths, blocks = _batch(files, [np.array(row_lengths)] * files, [((0, 2), (2, 3))] * files)
    samples, starts = cache_module._laid_out_by_transposing(per_file, lengths, blocks)
    want_samples, want_starts = _gathered(per_file, lengths, blocks)
    np.testing.assert_array_equal(samples, want_samples)
    np.testing.assert_array_equal(starts, want_starts)
    first_row = [per_file[f][:max(row_lengths[0], 0)] for f in range(files)]  # series 0: every file's, in order
    np.testing.assert_array_equal(samples[:sum(len(x) for x in first_row)], np.concatenate(first_row))


@pytest.mark.parametrize("case", ["lengths differ between files", "rows differ in sample count",
                                  "files have other series", "series not in order"])
def test_batches_the_transpose_cannot_lay_out_are_gathered(case):
    files, same_rows = 3, [np.array([4, -1, 4])] * 3
    lengths, blocks = same_rows, [((0, 3),)] * files
    if case == "lengths differ between files":
        lengths = [np.array([4, -1, 4]), np.array([4, 4, 4]), np.array([4, -1, 4])]
    elif case == "rows differ in sample count":
        lengths = [np.array([4, -1, 5])] * files
    elif case == "files have other series":
        blocks = [((0, 3),), ((3, 3),), ((0, 3),)]
    else:
        blocks = [((1, 2), (0, 1))] * files
        lengths = [np.array([4, 4, -1])] * files
    per_file, lengths, blocks = _batch(files, lengths, blocks)
    assert cache_module._laid_out_by_transposing(per_file, lengths, blocks) is None
    arrays = cache_module._samples_by_series({"samples": per_file, "sample_length": lengths}, list(blocks))
    want_samples, want_starts = _gathered(per_file, lengths, blocks)
    np.testing.assert_array_equal(arrays["samples"], want_samples)
    np.testing.assert_array_equal(arrays["sample_start"], want_starts)


def test_a_first_parse_of_a_runners_history_takes_the_transpose(tmp_path, monkeypatch):
    results = write_scale_history(tmp_path / "results", n_commits=12, n_series=300).results_dir
    taken = []
    real = cache_module._laid_out_by_transposing

    def watched(*args):
        laid = real(*args)
        taken.append(laid is not None)
        return laid

    monkeypatch.setattr(cache_module, "_laid_out_by_transposing", watched)
    data = build_data(results, cache_dir=tmp_path / "cache")
    assert taken and all(taken), taken  # one machine, one layout: every batch
    monkeypatch.undo()
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
    # the gate's loader skips the same two and says the same (an empty list once passed this vacuously)
    assert {"leak-virtualenv.json", "pipe-virtualenv.json"} <= set(loader)
    assert {k: reasons[k] for k in loader} == loader


# --------------------------------------------------------------------------- a cache that distrusts itself


def _folder(cache):
    return cache / next(os.scandir(cache)).name


def _load_within(seconds, *args, **kwargs):
    """build_data in a thread: a cache file that blocks the reader must fail the test, not hang it."""
    import threading

    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("data", build_data(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"loading took more than {seconds} s"
    return out["data"]


def _rebuilt(results, cache, plain):
    """The damaged cache is noticed (a note), everything parsed again, and the next start is clean."""
    data = _load_within(60, results, cache_dir=cache)
    assert data.files_parsed > 0 and "cache" in data.cache_note and "rebuilt" in data.cache_note, data.cache_note
    same(rows(data), plain)
    again = build_data(results, cache_dir=cache)
    assert again.files_parsed == 0 and not again.cache_note
    same(rows(again), plain)


@pytest.fixture
def cached(results, tmp_path):
    cache = tmp_path / "cache"
    build_data(results, cache_dir=cache)
    return results, cache, rows(build_data(results))


@pytest.mark.parametrize("content", ["[]", "null", "[" * 100_000 + "]" * 100_000, '{"format": 1}', "\xff\xfe",
                                     '{"format": 1, "parser": 3, "segments": "x"}'])
def test_a_manifest_of_any_shape_is_rebuilt(cached, content):
    results, cache, plain = cached
    (_folder(cache) / "manifest.json").write_bytes(content.encode("utf-8", "surrogateescape")
                                                   if content != "\xff\xfe" else b"\xff\xfe")
    _rebuilt(results, cache, plain)


def _edit_manifest(cache, edit):
    path = _folder(cache) / "manifest.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("edit", [
    lambda d: d["files"][0].update(segment=99),
    lambda d: d["files"][0].update(row_start=10**9),
    lambda d: d["files"][0].update(n_rows=-5),
    lambda d: d["files"][1].update(row_start=d["files"][1]["row_start"] + 1),  # plausible, and wrong
    lambda d: d["files"][0].update(layouts=[10**6]),
    lambda d: d["files"][0].update(commit_hash=["not", "a", "hash"]),
    lambda d: d["segments"][0].update(name="../../outside"),
    lambda d: d["segments"][0].update(name="/etc"),
    lambda d: d.update(files=[{**d["files"][0], "unexpected": 1}]),
], ids=["segment", "row-start", "negative-rows", "shifted-rows", "layout", "hash-type", "dotdot", "absolute",
        "extra-key"])
def test_edited_manifest_entries_are_noticed_and_rebuilt(cached, edit):
    results, cache, plain = cached
    _edit_manifest(cache, edit)
    _rebuilt(results, cache, plain)


def test_damaged_segments_are_noticed_and_rebuilt(cached):
    results, cache, plain = cached
    segment = next(_folder(cache).glob("seg-*"))
    value, ci = segment / "value.npy", segment / "ci_99_a.npy"
    tmp = segment / "tmp"
    value.rename(tmp), ci.rename(value), tmp.rename(ci)  # swapped columns: same dtype and length
    _rebuilt(results, cache, plain)
    segment = next(_folder(cache).glob("seg-*"))
    np.save(segment / "value.npy", np.load(segment / "value.npy").astype(np.float32))  # retyped
    _rebuilt(results, cache, plain)
    segment = next(_folder(cache).glob("seg-*"))
    data = bytearray((segment / "samples.npy").read_bytes())
    data[-8:] = np.float64(1e9).tobytes()  # one value edited in place
    (segment / "samples.npy").write_bytes(bytes(data))
    _rebuilt(results, cache, plain)
    segment = next(_folder(cache).glob("seg-*"))
    (segment / "repeat.npy").write_bytes(b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f8', 'fortran_order'")  # header
    _rebuilt(results, cache, plain)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_cache_files_that_would_block_exhaust_or_lead_out_are_not_read(cached, tmp_path):
    results, cache, plain = cached
    manifest = _folder(cache) / "manifest.json"
    manifest.unlink()
    os.mkfifo(manifest)  # opening it for reading would wait for a writer forever
    _rebuilt(results, cache, plain)
    manifest.unlink()
    os.symlink("/dev/zero", manifest)  # reading it never ends
    _rebuilt(results, cache, plain)
    segment = next(_folder(cache).glob("seg-*"))
    moved = tmp_path / "moved-segment"
    shutil.move(str(segment), moved)
    os.symlink(moved, segment)  # a segment folder that leads out of the cache
    _rebuilt(results, cache, plain)
    segment = next(_folder(cache).glob("seg-*"))
    (segment / "value.npy").unlink()
    os.mkfifo(segment / "value.npy")
    _rebuilt(results, cache, plain)


def test_a_result_file_rewritten_with_the_same_size_and_mtime_is_parsed_again(results, tmp_path):
    cache = tmp_path / "cache"
    signature = build_data(results, cache_dir=cache).signature
    path = sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))[-1]
    st = path.stat()
    text = path.read_text()
    doc = json.loads(text)
    name = next(n for n in doc["results"] if n.endswith("track_latency"))
    column = doc["result_columns"].index("result")
    old = json.dumps(doc["results"][name][column][0])
    assert isinstance(doc["results"][name][column][0], float)
    new = json.dumps(float(old) * 3)[:len(old)].ljust(len(old), "0")  # same length: same file size
    assert len(new) == len(old) and new != old
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert results_signature(results) != signature  # a running dashboard reloads
    data = build_data(results, cache_dir=cache)
    assert data.files_parsed == 1
    same(rows(data), rows(build_data(results)))


# --------------------------------------------------------------------------- one walk of the results folder


def _reasons(skipped):
    return {os.path.relpath(s.path): s.reason for s in skipped}


def test_the_gate_and_the_dashboard_read_the_same_files_and_skip_them_alike(results, tmp_path):
    """One listing (asv_results.results_folder) for the gate's loader, the cache and the reload
    check: a dangling link, a stray file under profiles/ and a hidden folder read the same way."""
    os.symlink(tmp_path / "gone.json", results / MAIN_MACHINE / "dangling-virtualenv.json")
    (results / "profiles").mkdir()
    shutil.copy(sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))[0], results / "profiles" / "stray.json")
    gate = load_results(results, jobs=1).load_report
    dashboard = build_data(results, cache_dir=tmp_path / "cache").report
    assert _reasons(gate.skipped) == _reasons(dashboard.skipped)
    assert "cannot stat" in _reasons(gate.skipped)[os.path.relpath(results / MAIN_MACHINE / "dangling-virtualenv.json")]
    assert sorted(gate.loaded_files) == sorted(dashboard.loaded_files)
    assert not any("profiles" in p for p in gate.loaded_files + list(_reasons(gate.skipped)))


def test_the_skip_reasons_folder_is_not_a_machine(results):
    """results/reasons/<machine>/<commit>.reasons (benchmarks/skip_reasons.py) sits beside the machine
    folders: neither the gate nor the pages may take it for one."""
    (results / "reasons" / MAIN_MACHINE).mkdir(parents=True)
    (results / "reasons" / MAIN_MACHINE / "abc.json").write_text('{"version": 1, "entries": []}')
    shutil.copy(sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))[0], results / "reasons" / "stray.json")
    report = load_results(results, jobs=1).load_report
    seen = [os.path.relpath(p, results) for p in report.loaded_files + [s.path for s in report.skipped]]
    assert seen and not any(p.startswith("reasons") for p in seen)


def test_a_dangling_link_does_not_blind_the_reload_check(results, tmp_path):
    """Once, one file the check could not stat made the signature a constant ("missing"): new
    results never reloaded."""
    os.symlink(tmp_path / "gone.json", results / MAIN_MACHINE / "dangling-virtualenv.json")
    before = results_signature(results)
    files = sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))
    doc = json.loads(files[0].read_text())
    doc["commit_hash"] = "b" * 40
    (results / MAIN_MACHINE / f"{'b' * 8}-{MAIN_ENV}.json").write_text(json.dumps(doc))
    assert results_signature(results) != before
    assert results_signature(tmp_path / "nowhere") == ("missing",)


def test_processes_starting_together_on_one_cache_parse_once_and_agree(results, tmp_path):
    """gunicorn's workers start at once on one cache dir: one parses and writes the cache, the
    others wait for it and read it (each once parsed everything and deleted the other's segments)."""
    import subprocess
    import sys

    go = tmp_path / "go"
    code = ("import os, sys, time; from dashboard.store.load_data import build_data; print('ready', flush=True)\n"
            "while not os.path.exists(sys.argv[3]): time.sleep(0.005)\n"
            "d = build_data(sys.argv[1], cache_dir=sys.argv[2])\n"
            "print(d.files_parsed, len(d.rows_frame(samples=False)), repr(d.cache_note))")
    starts = [subprocess.Popen([sys.executable, "-c", code, str(results), str(tmp_path / "cache"), str(go)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=os.path.dirname(os.path.dirname(__file__))) for _ in range(3)]
    assert [p.stdout.readline() for p in starts] == ["ready\n"] * 3  # all imported: now they load at once
    go.touch()
    outs = [p.communicate(timeout=300) for p in starts]
    assert all(p.returncode == 0 for p in starts), [err[-2000:] for _, err in outs]
    parsed, n_rows, notes = zip(*(out.split(maxsplit=2) for out, _ in outs))
    n_files = len(list(results.glob("*/*.json"))) - 2  # all but the machine.json files
    assert sorted(map(int, parsed)) == [0, 0, n_files]  # one parsed, the others read its cache
    assert len(set(n_rows)) == 1 and set(notes) == {"''\n"}
    assert build_data(results, cache_dir=tmp_path / "cache").files_parsed == 0


def test_the_detector_runs_once_per_results_change_for_all_processes_on_one_cache(results, tmp_path, monkeypatch):
    """gunicorn's workers each have a detector: the first detects and stores the findings in the
    cache folder, the others read them; a changed folder, or a stored file that was tampered
    with, is detected again."""
    from dashboard.store import detection
    from regressions import findings_store

    calls = []
    real = detection.detect
    monkeypatch.setattr(detection, "detect", lambda *a: calls.append(1) or real(*a))
    cache = tmp_path / "cache"

    def findings_of_a_new_worker():
        data = build_data(results, cache_dir=cache)
        state = detection.Detector(in_background=False).state(data.signature, results, cache, False,
                                                              data.project.commit_rank)
        assert state.status == "done", state.error
        return [findings_store._to_json(f) for f in state.findings]

    first = findings_of_a_new_worker()
    assert first and findings_of_a_new_worker() == first and len(calls) == 1
    stored = next(cache.rglob(findings_store.FILE_NAME))
    stored.write_text(stored.read_text().replace('"regression"', '"improvement"', 1))
    assert findings_of_a_new_worker() == first and len(calls) == 2  # not trusted: detected again
    doc = json.loads(sorted((results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json"))[-1].read_text())
    doc["commit_hash"] = "c" * 40
    (results / MAIN_MACHINE / f"{'c' * 8}-{MAIN_ENV}.json").write_text(json.dumps(doc))
    findings_of_a_new_worker()
    assert len(calls) == 3  # new results: detected again


def test_only_the_process_that_detects_starts_a_detector_process(results, tmp_path):
    """Two gunicorn workers over one cache: one takes the findings lock and detects in a worker
    process; the other waits for the lock in-process and reads what was stored: no ~150 MB
    detector process of its own."""
    import time

    from dashboard.store import detection

    cache = tmp_path / "cache"
    data = build_data(results, cache_dir=cache)
    workers = [detection.Detector(in_background=True) for _ in range(2)]
    try:
        states = [w.state(data.signature, results, cache, False, data.project.commit_rank) for w in workers]
        end = time.monotonic() + 120
        while any(s.status == "running" for s in states) and time.monotonic() < end:
            time.sleep(0.2)
        assert [s.status for s in states] == ["done", "done"], [s.error for s in states]
        assert states[0].findings and len(states[0].findings) == len(states[1].findings)
        assert states[0].verdict == states[1].verdict and "document" in states[0].verdict
        assert sum(w._executor is not None for w in workers) == 1
    finally:
        for w in workers:
            w.close()


def test_a_segment_column_is_read_whole_as_mapped_and_a_file_replaced_since_is_not_read(cached):
    results, cache, _ = cached
    parsed = cache_module.ResultsCache(results, cache).load()
    segment = parsed.segments[0]
    for column in cache_module.COLUMN_DTYPES:
        read = segment.read(column)
        assert not isinstance(read, np.memmap) and read.dtype == segment.arrays[column].dtype
        np.testing.assert_array_equal(read, np.asarray(segment.arrays[column]))
    path = _folder(cache) / segment.name / "value.npy"
    checked = np.array(segment.arrays["value"])
    replacement = path.with_name("new.npy")
    np.save(replacement, checked + 1.0)  # same dtype and length, other values, another file
    replacement.replace(path)
    np.testing.assert_array_equal(segment.read("value"), checked)  # the checked mapping's values


def test_a_first_parse_in_many_batches_spawns_one_pool_for_all_of_them(results, tmp_path, monkeypatch):
    """A pool costs each spawned worker its imports (about half a second of CPU): at 5,000 files
    in 50 batches a pool per batch spawned 100 workers. And the workers parse the next batch while
    this process writes the last one's segment: each batch is submitted before the one before it
    is written."""
    from asv_results import parallel_parse, worker_processes

    sizes = sorted(p.stat().st_size for p in results.glob("*/*.json"))
    monkeypatch.setattr(cache_module, "BATCH_BYTES", 8 * sizes[-1] + 1)  # 9 files a batch or more
    monkeypatch.setattr(parallel_parse, "FILES_PER_TASK", 2)  # in chunks of 2: each batch through the pool
    pools, batches, events = [], [], []
    real_pool, real_submit = worker_processes.process_pool, parallel_parse.submit_chunks
    real_write = cache_module.ResultsCache._write_segment
    monkeypatch.setattr(worker_processes, "process_pool", lambda jobs: pools.append(jobs) or real_pool(jobs))

    def submit(pool, *args):
        batches.append(pool)
        events.append("submit")
        return real_submit(pool, *args)

    monkeypatch.setattr(parallel_parse, "submit_chunks", submit)
    monkeypatch.setattr(cache_module.ResultsCache, "_write_segment",
                        lambda self, seg: events.append("write") or real_write(self, seg))
    cache = tmp_path / "cache"
    pooled = load_results(results, cache_dir=cache, jobs=2).frame
    assert len(_manifest(cache)["segments"]) >= 2 and pools == [2]
    assert len(batches) >= 2 and batches[0] is not None and all(pool is batches[0] for pool in batches)
    assert events[:3] == ["submit", "submit", "write"], events  # batch 2 is parsing while batch 1 is written
    alone = load_results(results, jobs=1).frame
    key = lambda frame: frame.assign(**{k: frame[k].astype(str) for k in KEYS}).sort_values(KEYS)  # noqa: E731
    np.testing.assert_array_equal(key(pooled)["value"].to_numpy(dtype=float), key(alone)["value"].to_numpy(dtype=float))


def test_a_detection_abandoned_by_close_is_not_run_again_in_a_thread(results, monkeypatch):
    """Stopping the app terminates the detector's worker; the broken pool that leaves must not
    start the detection again inline, in a thread of a server that is going away (in the browser
    tests such a thread was then killed mid-detection with the server's SystemExit)."""
    import concurrent.futures
    import time

    from dashboard.store import detection

    inline = []
    monkeypatch.setattr(detection.Detector, "_run_inline", staticmethod(lambda state, args: inline.append(args)))
    data = build_data(results)
    detector = detection.Detector(in_background=True)
    state = detector.state(data.signature, results, None, False, data.project.commit_rank)
    future = concurrent.futures.Future()
    detector.close()
    future.set_exception(concurrent.futures.process.BrokenProcessPool("terminated by close"))
    detector._finish(state, future, ())
    time.sleep(0.2)  # a thread it would have started has run by now
    assert inline == [] and state.status == "failed" and "stopped" in state.error
