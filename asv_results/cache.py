"""An incremental columnar cache of parsed asv result files, kept outside the results folder.

Parsing JSON is the wall at scale (2,000 result files of 5,000 series each are ~1.7 GB of JSON;
``json.loads`` alone takes minutes on two cores). Each result file is parsed once, by the
loader's own parser (``asv_results.parallel_parse.parse_files``, with its checks), into flat numpy arrays
that are stored as ``.npy`` segments beside a JSON manifest; a later start reads the manifest,
memory-maps the segments and parses only the files whose name, size or mtime changed.

    <cache_dir>/<results-key>/manifest.json     files -> (segment, first row), reasons, layouts
    <cache_dir>/<results-key>/seg-<id>/<column>.npy

Nothing here writes into the results folder (a cache dir inside it is refused), every write is
a new file moved into place (a reader never sees half a manifest), and any trouble with the cache
(unwritable, corrupt, edited, written by another version) falls back to parsing: the cache can
only make loading faster, never change what is loaded.

The cache distrusts itself as the loader distrusts results: the manifest is read with the
loader's limits (the one reader, asv_results.safe_read: a regular file inside the cache folder, size and nesting
capped), must have exactly the expected shape and carry a checksum of its own content; segment
folders and their ``.npy`` files must be regular, inside the cache folder, of the expected dtype
and length, and still be the files this module wrote: each column file is known by its size,
mtime, ctime, inode and device, as a result file is known by its name, size, mtime, ctime and
inode (rewriting a file in place with the same size and mtime still changes its ctime; a
rename or a copy changes its inode). Anything off and the whole cache is parsed again and
rewritten, with a log line and a note saying why. The columns are not hashed at each start: at
50 M points that read every byte of several GB before the first page (docs/dashboard.md,
"Cache and scale", has the measurement).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import shutil
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from asv_results import safe_read
from asv_results.safe_read import inside
from asv_results import cache_manifest, folder_lock, result_file, results_folder
from asv_results import data as loader
from asv_results.parallel_parse import parse_jobs, start_parse
from asv_results.worker_processes import shared_pool
from asv_results.cache_manifest import SEGMENT_NAME, CacheDamaged

log = logging.getLogger(__name__)
FORMAT = 4  # 3: column files known by their identity, not by a SHA-256 read at each start; 4: params per file
# Per-row columns of a segment, as the parser produces them (stats rows become their own files).
ROW_COLUMNS = ("value", "failed", *result_file.STATS_KEYS, "sample_start", "sample_length")
LOCK_NAME = ".lock"  # in the cache folder: held while a process loads through it
MAX_SEGMENTS = 24  # beyond this many, the small segments are merged into one
SMALL_SEGMENT_SHARE = 4  # a segment is small under a quarter of the largest one's rows
BATCH_BYTES = 192 << 20  # JSON parsed per segment: the parser's arrays for it are what memory holds
SKIP_DIRS = results_folder.NOT_MACHINES  # results/profiles holds profile passes (dashboard.data.profiles)
# The dtype each column is written with; a column read back in another is not this cache's.
COLUMN_DTYPES = {"value": np.float64, "failed": np.bool_, **{k: np.float64 for k in result_file.STATS_KEYS},
                 "sample_start": np.int64, "sample_length": np.int64, "samples": np.float64}


def cache_inside_results(results_dir: str | Path, cache_dir: str | Path) -> bool:
    """Whether a cache dir lies inside the results folder (or is it): its files would then be
    read as results, and every write would look like a change of the results."""
    return inside(Path(cache_dir), Path(results_dir))


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/fused-mlp-bench (else ~/.cache/fused-mlp-bench): outside any results folder."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fused-mlp-bench"


def parser_fingerprint() -> str:
    """Changes when the parser's code does (data.py, result_file.py, the reader safe_read.py, results_folder.py,
    cache_manifest.py, this module): a cache written by another version is not trusted."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    for path in (Path(loader.__file__), Path(result_file.__file__), Path(safe_read.__file__),
                 Path(results_folder.__file__), Path(cache_manifest.__file__), Path(__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# --------------------------------------------------------------------------- what is on disk


@dataclass
class Segment:
    """Rows of some result files: each ROW_COLUMNS array has one entry per row; ``samples`` is
    every row's samples, concatenated (row i: samples[sample_start[i]:][:sample_length[i]],
    length -1 for none). Arrays are memory-maps of the cache, or in memory without one."""

    name: str
    arrays: dict[str, np.ndarray]
    identities: dict[str, list[int]] = field(default_factory=dict)  # column -> its .npy file's identity, once written

    @property
    def rows(self) -> int:
        return len(self.arrays["value"])

    def read(self, column: str) -> np.ndarray:
        """A whole column, in memory. A mapped column is read from its file (a plain read: ten
        times faster than copying through the mapping's page faults, and none of the file's pages
        stay in this process's resident memory), from the file with the identity it was checked
        with; should that file have been replaced since, through the checked mapping instead."""
        array = self.arrays[column]
        if not isinstance(array, np.memmap) or column not in self.identities:
            return np.array(array)
        out = np.empty(len(array), array.dtype)
        try:
            with open(array.filename, "rb") as f:
                if _file_identity(os.fstat(f.fileno())) != self.identities[column]:
                    raise OSError("replaced since it was checked")
                f.seek(array.offset)
                if f.readinto(memoryview(out).cast("B")) != out.nbytes:
                    raise OSError("shorter than when it was checked")
        except OSError:
            out[:] = array
        return out


def release(array: np.ndarray) -> None:
    """Unmap the pages a read of a memory-mapped column touched (they stay in the page cache and
    are mapped again on the next read). Without this, the rows of one series over 5,000 commits,
    one row per page, keep ~1 GB of the cache's files in the serving process's resident memory
    (the kernel maps 16 neighbouring pages with each one read)."""
    mapped = getattr(array, "_mmap", None)
    if mapped is not None and hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_DONTNEED)


@dataclass
class FileEntry:
    """One result file: its identity and where its rows are (``layouts``: per benchmark in file
    order, an index into ParsedResults.layouts; the rows follow in that order)."""

    path: str  # relative to the results folder
    machine: str
    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0
    reason: str | None = None  # why the file cannot be used (then nothing else is set)
    env_name: str = ""
    commit_hash: str = ""
    date: int = 0  # ms since the epoch, as asv stores it
    layouts: list[int] = field(default_factory=list)
    problems: list[list[str]] = field(default_factory=list)  # [benchmark, why it was left out]
    params: dict = field(default_factory=dict)  # the run's identity asv copied in (gpu, torch, ...)
    segment: int = -1
    row_start: int = 0
    n_rows: int = 0

    @property
    def key(self) -> tuple:
        return (self.path, self.size, self.mtime_ns, self.ctime_ns, self.inode)


@dataclass
class ParsedResults:
    """Everything loaded from a results folder, in the order of the files on disk."""

    root: Path
    files: list[FileEntry]  # usable files and unusable ones (``reason``)
    layouts: list[tuple[str, list[list[str]]]]  # (benchmark, params as asv stores them)
    segments: list[Segment]
    benchmarks: dict  # benchmarks.json, name -> metadata
    machines: dict  # machine -> machine.json
    skipped: list[loader.SkippedFile]  # benchmarks.json / machine.json / walk problems
    parsed: int = 0  # files parsed now (the rest came from the cache)
    cache_note: str = ""  # "" or why the cache was not used
    listed: tuple = ()  # the folder's listing as this load found it (results_folder.Listing.signature)


# --------------------------------------------------------------------------- the results folder


read_benchmarks = results_folder.read_benchmarks  # the loader's reading of benchmarks.json


# --------------------------------------------------------------------------- parsing into a segment


def _segment_from_parsed(parsed: list[dict], entries: list[FileEntry], layouts: dict, segment_index: int,
                         name: str) -> Segment:
    """Concatenate the parser's per-file arrays into one segment and fill in the entries."""
    row = 0
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("value", "failed", "sample_length", "samples")}
    stats_parts: list[np.ndarray] = []
    file_blocks: list[tuple] = []  # per file: (first series code, rows) of each benchmark block
    # The first code of each (machine, env, layout)'s block: a layout's n rows are its series
    # 0..n-1 in every file, so the block numbers them as a code per row numbered them in order.
    series_blocks: dict[tuple, int] = {}
    next_code = 0
    for doc, entry in zip(parsed, entries):
        if doc["reason"] is not None:
            entry.reason = doc["reason"]
            continue
        entry.env_name, entry.commit_hash, entry.date = doc["env_name"], doc["commit_hash"], int(doc["date"])
        entry.problems = [[name_, why] for name_, why in doc["problems"]]
        entry.params = doc["params"]
        entry.layouts = [layouts.setdefault(_layout_key(b_name, params), len(layouts))
                         for b_name, params, _version, _n in doc["benches"]]
        entry.segment, entry.row_start, entry.n_rows = segment_index, row, len(doc["values"])
        row += entry.n_rows
        blocks = []
        for layout, (_b, _p, _v, n) in zip(entry.layouts, doc["benches"]):
            start = series_blocks.get((entry.machine, entry.env_name, layout))
            if start is None:
                start = series_blocks[entry.machine, entry.env_name, layout] = next_code
                next_code += n
            blocks.append((start, n))
        file_blocks.append(tuple(blocks))
        parts["value"].append(doc["values"])
        parts["failed"].append(doc["failed"])
        stats_parts.append(doc["stats"])
        parts["sample_length"].append(doc["sample_lengths"])
        parts["samples"].append(doc["sample_values"])
    # the samples stay one array per file: _samples_by_series lays them out
    arrays = {k: np.concatenate(v) if v else np.empty(0) for k, v in parts.items() if k != "samples"}
    arrays["samples"] = parts["samples"]
    arrays["failed"] = arrays["failed"].astype(bool)
    arrays["sample_length"] = arrays["sample_length"].astype(np.int64)
    stats = np.concatenate(stats_parts, axis=1) if stats_parts else np.empty((len(result_file.STATS_KEYS), 0))
    for i, key in enumerate(result_file.STATS_KEYS):
        arrays[key] = np.ascontiguousarray(stats[i])
    return Segment(name, _samples_by_series(arrays, file_blocks))


def _samples_by_series(arrays: dict, file_blocks: list[tuple]) -> dict:
    """Lay the samples out series by series and give each row its start there: a Trends view
    reads one series over every commit, which is then a few contiguous reads instead of a page
    fault per commit. ``arrays["samples"]``: one array per file (rows in file order);
    ``file_blocks``: per file, (first series code, rows) of each of its benchmark blocks."""
    per_file = arrays["samples"]
    laid = _laid_out_by_transposing(per_file, arrays["sample_length"], file_blocks)
    if laid is None:
        series = [np.arange(start, start + n, dtype=np.int64) for blocks in file_blocks for start, n in blocks]
        laid = _laid_out_by_gathering(np.concatenate(per_file) if per_file else np.empty(0), arrays["sample_length"],
                                      np.concatenate(series) if series else np.empty(0, np.int64))
    arrays["samples"], arrays["sample_start"] = laid
    return arrays


def _laid_out_by_transposing(per_file: list[np.ndarray], lengths: np.ndarray, file_blocks: list[tuple]):
    """(samples, starts) by series without an index per sample, for the batch a runner writes:
    every file with the same series in increasing order and the same number of samples per row,
    one number for every row that has any. Then the samples are a (row, file, sample) transpose
    of the files' (file, row, sample): one copy instead of a sort and a gather of 8-byte indices
    per sample (a fifth of a first parse's own work at 50 M points). None: another batch."""
    files = len(file_blocks)
    first = file_blocks[0] if files else ()
    if not files or any(blocks != first for blocks in file_blocks) or any(
            a + n > b for (a, n), (b, _) in zip(first, first[1:])):
        return None
    by_file = lengths.reshape(files, -1)
    if not (by_file == by_file[0]).all():
        return None
    counts = np.maximum(by_file[0], 0)
    with_samples = counts > 0
    per_row = np.unique(counts[with_samples])
    if len(per_row) > 1:
        return None
    each = int(per_row[0]) if len(per_row) else 0
    rows = int(with_samples.sum())
    samples = np.empty((rows, files, each))
    for f, values in enumerate(per_file):
        samples[:, f, :] = values.reshape(rows, each)
    before = np.cumsum(with_samples) - with_samples  # rows with samples ahead of each row in its file
    starts = (before * files * each)[None, :] + np.arange(files, dtype=np.int64)[:, None] * counts[None, :]
    return samples.reshape(-1), starts.reshape(-1).astype(np.int64)


def _laid_out_by_gathering(samples: np.ndarray, lengths: np.ndarray, series: np.ndarray):
    """(samples, starts) by series for any batch: the rows sorted by series (stable: files in
    order), and every sample gathered to its place."""
    lengths = np.maximum(lengths, 0)
    order = np.argsort(series, kind="stable")  # rows of a series, in file order
    counts = lengths[order]
    new_start = np.empty_like(lengths)
    new_start[order] = np.cumsum(counts) - counts
    starts = np.cumsum(lengths) - lengths
    gather = np.repeat(starts[order] - new_start[order], counts) + np.arange(int(counts.sum()))
    return samples[gather], new_start


def _batches(entries: list[FileEntry]):
    """Files to parse, in groups of about BATCH_BYTES of JSON: each group becomes one segment."""
    batch, size = [], 0
    for e in entries:
        batch.append(e)
        size += e.size
        if size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _file_identity(info: os.stat_result) -> list[int]:
    """What tells a column file from any other (cache_manifest.IDENTITY_FIELDS of them)."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def _open_segment(folder: Path, name: str, identities: dict[str, list[int]], root: Path) -> Segment:
    """Memory-map a segment's columns, after checking that each is a regular file inside
    ``root`` (the cache folder) that is still the file written (``identities[column]``,
    _file_identity) and holds the dtype and shape written; CacheDamaged otherwise."""
    if not SEGMENT_NAME.match(name) or os.path.islink(folder) or not inside(folder, root) or not folder.is_dir():
        raise CacheDamaged(f"segment {name!r} is not a folder of this cache")
    arrays = {}
    for column, dtype in COLUMN_DTYPES.items():
        path = folder / f"{column}.npy"
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise CacheDamaged(f"segment {name}: {column}.npy cannot be read ({exc.strerror or exc})") from None
        if not stat.S_ISREG(info.st_mode):
            raise CacheDamaged(f"segment {name}: {column}.npy is not a regular file")
        if _file_identity(info) != identities.get(column):
            raise CacheDamaged(f"segment {name}: {column}.npy was changed or replaced since it was written")
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise CacheDamaged(f"segment {name}: {column}.npy is not a readable array ({exc})") from None
        if array.dtype != dtype or array.ndim != 1:
            raise CacheDamaged(f"segment {name}: {column}.npy holds {array.dtype} x {array.ndim}-D, expected "
                               f"{np.dtype(dtype)} x 1-D")
        arrays[column] = array
    if len({len(arrays[c]) for c in ROW_COLUMNS}) != 1:
        raise CacheDamaged(f"segment {name}: its columns have different lengths")
    return Segment(name, arrays, dict(identities))


def _check_samples(segment: Segment) -> None:
    """Every row's samples must lie inside its segment's samples (the files' rows were checked
    against the segment's length by the manifest's checks). Once per segment, with plain reads:
    checked file by file through the mappings it cost 0.5 s and left 800 MB of the cache's pages
    in the process's memory at 50 M points."""
    lengths, starts = segment.read("sample_length"), segment.read("sample_start")
    if not len(lengths):
        return
    present = lengths > 0  # np.where rather than starts[present]: no copies of the rows with samples
    if lengths.min() < -1 or np.where(present, starts, 0).min() < 0 or np.where(
            present, starts + lengths, 0).max() > len(segment.arrays["samples"]):
        raise CacheDamaged(f"segment {segment.name}: its rows' samples lie outside it")


_FILE_FIELDS = {f.name: {"str": str, "int": int, "str | None": (str, type(None)), "dict": dict,
                         "list[int]": list, "list[list[str]]": list}[f.type] for f in fields(FileEntry)}


def _merge(result: ParsedResults, merge: set[int]) -> None:
    """Copy the rows of the files in segments ``merge`` into one new segment."""
    moving = [e for e in result.files if e.reason is None and e.segment in merge]
    parts: dict[str, list] = {c: [] for c in (*ROW_COLUMNS, "samples")}
    row = sample = 0
    for e in moving:
        src = result.segments[e.segment].arrays
        rows = slice(e.row_start, e.row_start + e.n_rows)
        lengths = np.maximum(np.asarray(src["sample_length"][rows]), 0)
        starts = np.asarray(src["sample_start"][rows])
        total = int(lengths.sum())
        gather = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)
        for c in ROW_COLUMNS:
            if c != "sample_start":
                parts[c].append(np.asarray(src[c][rows]))
        parts["sample_start"].append(np.cumsum(lengths) - lengths + sample)
        parts["samples"].append(np.asarray(src["samples"][gather]))
        e.row_start, row, sample = row, row + e.n_rows, sample + total
    arrays = {c: np.concatenate(v) if v else np.empty(0) for c, v in parts.items()}
    result.segments.append(Segment(f"seg-{uuid.uuid4().hex[:12]}", arrays))
    for e in moving:
        e.segment = len(result.segments) - 1


def _layout_key(name: str, params) -> str:
    return json.dumps([name, params], separators=(",", ":"))


# --------------------------------------------------------------------------- the cache


class ResultsCache:
    """Load a results folder (one ``machine``'s folder of it when given) through the cache at
    ``cache_dir`` (None: parse everything, keep nothing on disk). A cache dir inside the results
    folder is not used (see load)."""

    def __init__(self, results_dir: str | Path, cache_dir: str | Path | None = None, jobs: int | None = None,
                 machine: str | None = None, progress=None):
        self.root = Path(results_dir)
        self.jobs = jobs
        self.machine = machine
        # told (files parsed, files to parse, seconds) after each batch: asv_results.parse_progress
        self.progress = progress
        self.dir = None
        self.refused = ""
        if cache_dir is not None:
            if cache_inside_results(self.root, cache_dir):
                self.refused = (f"cache dir {str(cache_dir)!r} is inside the results folder, where its files would "
                                f"be read as results; not used")
            else:
                # fsencode: a results path that is not UTF-8 hashes by its bytes
                # one machine's folder alone is a cache of its own: it must not drop the others' segments
                where = os.fsencode(self.root.resolve()) + (b"\0" + os.fsencode(machine) if machine is not None else b"")
                key = hashlib.sha256(where).hexdigest()[:16]
                self.dir = Path(cache_dir) / f"results-{key}"

    def load(self) -> ParsedResults:
        """Every result file, parsed now or read from the cache. Raises loader.ResultsDirError
        when the results folder itself is unusable."""
        results_folder.check_root(self.root)
        with self._exclusive():
            return self._load_locked()

    def _exclusive(self):
        """One process at a time loads through this cache (gunicorn's workers start together on
        one cache dir): the first parses and writes it, the others wait and then read it, instead
        of each parsing everything and deleting the segments the other just wrote. Where there is
        no lock to take (no cache, a folder that cannot be written, no flock) the load goes ahead."""
        if self.dir is None:
            return contextlib.nullcontext()
        return folder_lock.exclusive(self.dir, LOCK_NAME)

    def _load_locked(self) -> ParsedResults:
        listing = results_folder.list_results(self.root, self.machine)
        benchmarks, bench_skipped = read_benchmarks(self.root)
        note = self.refused
        cached = None
        if self.dir is not None:
            try:
                cached = self._read_manifest()
            except CacheDamaged as exc:
                note = f"cache not used ({exc}); rebuilt"
                log.warning("the cache in %s is not used (%s); parsing every result file again", self.dir, exc)
        result = self._load(listing.files, cached)
        result.benchmarks, result.machines, result.listed = benchmarks, listing.machines, listing.signature()
        result.skipped = bench_skipped + listing.skipped
        if self.dir is not None and not result.cache_note:
            try:
                self._write(result, cached)
            except OSError as exc:
                result.cache_note = f"could not write the cache in {self.dir} ({exc.strerror or exc})"
        result.cache_note = result.cache_note or note
        return result

    # -- reading

    def _read_manifest(self) -> dict | None:
        """The cache's content (None: there is none, or another version's); CacheDamaged when
        anything in it is not what this module wrote."""
        path = self.dir / "manifest.json"
        if not (path.exists() or path.is_symlink()):
            return None
        doc, reason = safe_read.read_json(path, self.dir)  # regular, inside, capped: never blocks or exhausts
        if reason is not None:
            raise CacheDamaged(f"manifest: {reason}")
        if isinstance(doc, dict) and (doc.get("format") != FORMAT or doc.get("parser") != parser_fingerprint()):
            raise CacheDamaged("written by another version of the dashboard")  # parsed again and replaced
        cache_manifest.check_manifest(doc, _FILE_FIELDS, tuple(COLUMN_DTYPES))
        segments = []
        for seg in doc["segments"]:
            segment = _open_segment(self.dir / seg["name"], seg["name"], seg["files"], self.dir)
            if segment.rows != seg["rows"] or len(segment.arrays["samples"]) != seg["samples"]:
                raise CacheDamaged(f"segment {seg['name']} does not match the manifest")
            _check_samples(segment)
            segments.append(segment)
        files = {}
        for f in doc["files"]:
            entry = FileEntry(**f)
            files[entry.key] = entry
        return {"segments": segments, "files": files, "layouts": [tuple(x) for x in doc["layouts"]]}

    def _load(self, listed: list[results_folder.ResultFile], cached: dict | None) -> ParsedResults:
        segments: list[Segment] = list(cached["segments"]) if cached else []
        known = cached["files"] if cached else {}
        layouts: dict[str, int] = {_layout_key(n, p): i for i, (n, p) in enumerate(cached["layouts"])} if cached else {}
        entries, todo = [], []
        for f in listed:
            entry = known.get(f.identity)  # FileEntry.key: the same (path, size, mtime, ctime, inode)
            if entry is None or entry.machine != f.machine:
                entry = FileEntry(f.relative, f.machine, f.size, f.mtime_ns, f.ctime_ns, f.inode)
                todo.append(entry)
            entries.append(entry)
        note = ""
        started, done = time.perf_counter(), 0
        jobs = self.jobs if self.jobs is not None else parse_jobs(sum(e.size for e in todo))
        with shared_pool(jobs) as pool:  # one pool for every batch
            # The workers parse the next batch while this process builds and writes the one they
            # parsed, instead of waiting idle for it (5,000 files: 173 s -> 150 s).
            batches = list(_batches(todo))
            collect = self._start_parse(batches[0], jobs, pool) if batches else None
            for i, batch in enumerate(batches):
                parsed = collect()
                if i + 1 < len(batches):
                    collect = self._start_parse(batches[i + 1], jobs, pool)
                segment = _segment_from_parsed(parsed, batch, layouts, len(segments),
                                               f"seg-{uuid.uuid4().hex[:12]}")
                del parsed
                if self.dir is not None and not note:
                    try:  # on disk now and mapped back: memory stays at one batch, not the whole history
                        self.dir.mkdir(parents=True, exist_ok=True)
                        identities = self._write_segment(segment)
                        segment = _open_segment(self.dir / segment.name, segment.name, identities, self.dir)
                    except OSError as exc:
                        note = f"could not write the cache in {self.dir} ({exc.strerror or exc})"
                segments.append(segment)
                done += len(batch)
                if self.progress is not None:
                    self.progress(done, len(todo), time.perf_counter() - started)
        layout_list = [None] * len(layouts)
        for key, i in layouts.items():
            layout_list[i] = tuple(json.loads(key))
        return ParsedResults(self.root, entries, layout_list, segments, {}, {}, [], parsed=len(todo), cache_note=note)

    def _start_parse(self, batch: list[FileEntry], jobs: int, pool):
        return start_parse([(str(self.root / e.path), e.machine, str(self.root)) for e in batch], jobs, pool)

    # -- writing

    def _write(self, result: ParsedResults, cached: dict | None) -> None:
        """Store the new segment (if any), merge small segments when there are many, drop
        segments no file uses any more, and replace the manifest."""
        if cached is not None and not result.parsed and len(cached["files"]) == len(result.files):
            return  # nothing changed on disk
        self.dir.mkdir(parents=True, exist_ok=True)
        self._compact(result)
        used = {e.segment for e in result.files if e.reason is None}
        for i, seg in enumerate(result.segments):
            if i in used and not seg.identities:
                seg.identities = self._write_segment(seg)
        live = [i for i in range(len(result.segments)) if i in used]
        renumber = {old: new for new, old in enumerate(live)}
        result.segments = [result.segments[i] for i in live]
        for e in result.files:
            if e.reason is None:
                e.segment = renumber[e.segment]
        manifest = {
            "format": FORMAT, "parser": parser_fingerprint(), "results_dir": str(self.root.resolve()),
            "layouts": [list(x) for x in result.layouts],
            "segments": [{"name": s.name, "rows": s.rows, "samples": len(s.arrays["samples"]), "files": s.identities}
                         for s in result.segments],
            "files": [e.__dict__ for e in result.files],
        }
        manifest[cache_manifest.CHECKSUM_KEY] = cache_manifest.checksum(manifest)
        self._replace(self.dir / "manifest.json", json.dumps(manifest).encode())
        keep = {s.name for s in result.segments}
        for old in self.dir.glob("seg-*"):  # a reader that has one mapped keeps it until it lets go
            if old.name not in keep:
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old, ignore_errors=True)
                else:  # a link or file where a segment was: not ours to follow
                    old.unlink(missing_ok=True)

    def _write_segment(self, seg: Segment) -> dict[str, list[int]]:
        """Write a segment's columns; their files' identities once in place, for the manifest."""
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.dir))
        target = self.dir / seg.name
        try:
            for column, dtype in COLUMN_DTYPES.items():
                np.save(tmp / f"{column}.npy", np.ascontiguousarray(seg.arrays[column], dtype=dtype),
                        allow_pickle=False)
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                target.unlink()
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        # stat'd where they stay: moving the folder changes none of its files' identities
        seg.identities = {column: _file_identity(os.lstat(target / f"{column}.npy")) for column in COLUMN_DTYPES}
        return seg.identities

    @staticmethod
    def _compact(result: ParsedResults) -> None:
        """Rewrite into one new segment the live rows of segments that are mostly dead (their
        files were replaced or removed) and, when there are too many, of the small ones (under a
        quarter of the largest: a few files parsed at a later start). Full batches are never
        merged: a first parse of 50 M points is 50 of them, and merging them would hold every
        row in memory at once."""
        live = np.zeros(len(result.segments), dtype=np.int64)
        for e in result.files:
            if e.reason is None:
                live[e.segment] += e.n_rows
        total = np.array([s.rows for s in result.segments], dtype=np.int64)
        merge = {i for i in range(len(total)) if live[i] and live[i] < total[i] // 2}
        if np.count_nonzero(live) > MAX_SEGMENTS:
            merge |= {i for i in np.flatnonzero(live) if live[i] < live.max() // SMALL_SEGMENT_SHARE}
        if merge and (len(merge) > 1 or any(live[i] < total[i] for i in merge)):
            _merge(result, merge)

    @staticmethod
    def _replace(path: Path, content: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
