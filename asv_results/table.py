"""The dashboard's compact table of every stored value: one row per (run, commit, series).

Built from asv_results.cache.ParsedResults (no pandas frame of every row: at 2,000 commits x
5,000 series that frame alone would not fit the dashboard's memory budget). In memory per row
only what views scan: the series (int32), the value (float64) and asv's status (int8). Rows are
ordered run by run, commits oldest first, so one commit of one run is a slice. Every other
stored column (CIs, repeat, quartiles, the raw samples) stays in the cache's segments
(memory-mapped) and is read for the rows a view shows.

A series is one (machine, environment, benchmark, parameter combination); ``series`` is a small
DataFrame with one row per series (benchmark, params_key, unit, parameter names, parsed values
and the repr() strings asv stores).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asv_results.cache import ParsedResults, release
from asv_results.commit_order import ORDER, commit_order  # noqa: F401 (commit_order: one definition, read here)
from asv_results.duplicates import choose
from asv_results.data import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED
from asv_results.result_file import parse_param_value

STATUSES = (STATUS_OK, STATUS_SKIPPED, STATUS_FAILED)  # status codes 0, 1, 2
LAZY_COLUMNS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")


@dataclass
class RunRows:
    """One (machine, environment): its commits in order and where each commit's rows are."""

    machine: str
    env_name: str
    commits: pd.DataFrame  # commit_hash, date (UTC), position
    start: np.ndarray  # rows of commit position p are start[p]:start[p + 1]

    def rows_at(self, position: int) -> slice:
        return slice(int(self.start[position]), int(self.start[position + 1]))

    @property
    def rows(self) -> slice:
        return slice(int(self.start[0]), int(self.start[-1]))


class ResultsTable:
    def __init__(self, parsed: ParsedResults, commit_rank: dict[str, int] | None = None):
        self.parsed = parsed
        self.segments = parsed.segments
        usable = [e for e in parsed.files if e.reason is None]
        kept, self.duplicate_notes = choose([(str(parsed.root / e.path), e.machine, e.env_name, e.commit_hash)
                                             for e in usable])  # one file per commit, as the gate reads
        by_run: dict[tuple[str, str], list] = {}
        self._files: dict[tuple[str, str, str], object] = {}  # (machine, env, commit) -> its FileEntry
        for e in (usable[i] for i in kept):
            by_run.setdefault((e.machine, e.env_name), []).append(e)
            self._files[(e.machine, e.env_name, e.commit_hash)] = e
        self._series_keys: dict[tuple, int] = {}  # (machine, env, benchmark, params_key) -> series id
        self._series_rows: list[tuple] = []
        self._layout_combos: dict[int, tuple] = {}
        # Files with the same benchmarks and grids (a "signature") hold the same series in the same
        # order: one row's series is found from its file's first row and its offset.
        self.groups: list[tuple[np.ndarray, list[int]]] = []  # (series ids in file order, files' first rows)
        ordered, self.runs, row = [], {}, 0
        for run_key in sorted(by_run):
            files = by_run[run_key]
            dates: dict[str, int] = {}
            for e in files:
                dates[e.commit_hash] = min(dates.get(e.commit_hash, e.date), e.date)
            commits = commit_order(dates, commit_rank)
            position = {h: i for i, h in enumerate(commits)}
            files.sort(key=lambda e: (position[e.commit_hash], e.path))
            counts = np.zeros(len(commits), dtype=np.int64)
            groups: dict[tuple, int] = {}
            first_row = row
            for e in files:
                sig = tuple(e.layouts)
                if sig not in groups:
                    groups[sig] = len(self.groups)
                    self.groups.append((self._series_ids(run_key, sig), []))
                ids, starts = self.groups[groups[sig]]
                starts.append(row)
                ordered.append((e, ids, row))
                row += e.n_rows
                counts[position[e.commit_hash]] += e.n_rows
            commit_frame = pd.DataFrame({
                "commit_hash": commits,
                "date": pd.to_datetime(np.array([dates[h] for h in commits], dtype=np.int64), unit="ms", utc=True),
                "position": np.arange(len(commits))})
            self.runs[run_key] = RunRows(*run_key, commit_frame, first_row + np.r_[0, np.cumsum(counts)])
        self.groups = [(ids, np.asarray(starts, dtype=np.int64)) for ids, starts in self.groups]
        self.n_rows = row
        self.series = pd.DataFrame(self._series_rows, columns=["machine", "env_name", "benchmark", "params_key",
                                                               "unit", "param_names", "param_values", "param_reprs"])
        self.series.index.name = "series"
        # per-row arrays, in the order above; each file's rows are a slice of its segment
        self.series_of_row = (np.concatenate([ids for _, ids, _ in ordered]) if ordered
                              else np.empty(0, np.int32))
        self.value, self.status = self._value_and_status(ordered)
        self.file_dest_start = np.array([r for _, _, r in ordered], dtype=np.int64)
        self.file_segment = np.array([e.segment for e, _, _ in ordered], dtype=np.int64)
        self.file_src_start = np.array([e.row_start for e, _, _ in ordered], dtype=np.int64)
        del self._series_keys, self._layout_combos

    def _series_ids(self, run_key: tuple[str, str], signature: tuple[int, ...]) -> np.ndarray:
        """The series of a file's rows, numbering series not seen before."""
        ids = []
        for layout in signature:
            combos = self._layout_combos.get(layout)
            if combos is None:
                combos = self._layout_combos[layout] = self._combos(*self.parsed.layouts[layout])
            bench, keys, names, values, reprs, unit = combos
            for k, v, r in zip(keys, values, reprs):
                key = (*run_key, bench, k)
                sid = self._series_keys.get(key)
                if sid is None:
                    sid = self._series_keys[key] = len(self._series_rows)
                    self._series_rows.append((*run_key, bench, k, unit, names, v, r))
                ids.append(sid)
        return np.asarray(ids, dtype=np.int32)

    def _combos(self, bench: str, params: list) -> tuple:
        """A benchmark's parameter grid as asv stores it -> (name, params_keys, param names, parsed
        values and asv's repr() strings per combination, unit). Names as load_results gives them."""
        meta = self.parsed.benchmarks.get(bench) if isinstance(self.parsed.benchmarks.get(bench), dict) else {}
        names = meta.get("param_names")
        if not isinstance(names, list) or len(names) != len(params):
            names = [f"param{i + 1}" for i in range(len(params))]  # asv's own default names
        combos = list(itertools.product(*params)) if params else [()]
        keys = [", ".join(f"{n}={v}" for n, v in zip(names, combo)) for combo in combos]
        values = [tuple(parse_param_value(str(v)) for v in combo) for combo in combos]
        reprs = [tuple(str(v) for v in combo) for combo in combos]
        unit = meta.get("unit") if isinstance(meta.get("unit"), str) else None
        return bench, keys, tuple(str(n) for n in names), values, reprs, unit

    def _value_and_status(self, ordered) -> tuple[np.ndarray, np.ndarray]:
        """Every row's value and asv's status (STATUSES: 2 failed, else 1 skipped where the value
        is NaN, else 0 ok), in table order. Each segment's two columns are read once, whole
        (Segment.read: a plain read, not page faults through the mapping), and its files' rows
        copied where they go; no temporary of every row is made (np.where's int64 ones were 800 MB
        at 50 M points)."""
        value, failed = np.empty(self.n_rows, np.float64), np.empty(self.n_rows, bool)
        by_segment: dict[int, list[tuple[int, int, int]]] = {}
        for e, _, dest in ordered:
            by_segment.setdefault(e.segment, []).append((e.row_start, e.n_rows, dest))
        for segment, files in by_segment.items():
            seg_value, seg_failed = self.segments[segment].read("value"), self.segments[segment].read("failed")
            for src, n, dest in files:
                value[dest:dest + n] = seg_value[src:src + n]
                failed[dest:dest + n] = seg_failed[src:src + n]
        status = np.isnan(value).view(np.int8)  # 1 where asv stored NaN (skipped), else 0
        status[failed] = 2
        return value, status

    # ----------------------------------------------------------------------- finding rows

    def file_of(self, machine: str, env_name: str, commit_hash: str):
        """The result file (asv_results.cache.FileEntry: path, params, ...) this table read for
        one run's commit, or None."""
        return self._files.get((machine, env_name, commit_hash))

    def rows_of_series(self, series_ids) -> np.ndarray:
        """Every row of these series, in table order (run, then commit); found from the files'
        layouts, without a scan of every row."""
        ids = np.asarray(list(series_ids), dtype=np.int64)
        parts = []
        for group_ids, starts in self.groups:
            offsets = np.flatnonzero(np.isin(group_ids, ids))
            if len(offsets):
                parts.append((starts[:, None] + offsets[None, :]).ravel())
        if len(parts) == 1:  # one group's rows are in order already: its files' first rows ascend,
            return parts[0]  # and a file's offsets ascend within it (a sort of 1 M rows was 0.2 s)
        return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def positions(self, run: RunRows, rows: np.ndarray) -> np.ndarray:
        """The commit position of each of ``run``'s rows."""
        return np.searchsorted(run.start, rows, side="right") - 1

    # ----------------------------------------------------------------------- columns kept on disk

    def _sources(self, rows: np.ndarray):
        rows = np.asarray(rows, dtype=np.int64)
        f = np.searchsorted(self.file_dest_start, rows, side="right") - 1
        return self.file_segment[f], self.file_src_start[f] + (rows - self.file_dest_start[f])

    def column(self, name: str, rows) -> np.ndarray:
        """A stored column (LAZY_COLUMNS) for these rows, read from the segments."""
        segment, local = self._sources(rows)
        out = np.full(len(local), np.nan)
        for s in np.unique(segment):
            mask = segment == s
            column = self.segments[int(s)].arrays[name]
            out[mask] = column[local[mask]]
            release(column)
        return out

    def samples(self, rows) -> list:
        """asv's samples list (or None) of each row."""
        segment, local = self._sources(rows)
        out: list = [None] * len(local)
        for s in np.unique(segment):
            arrays = self.segments[int(s)].arrays
            where = np.flatnonzero(segment == s)
            lengths = np.asarray(arrays["sample_length"][local[where]])
            starts = np.asarray(arrays["sample_start"][local[where]])
            release(arrays["sample_length"]), release(arrays["sample_start"])
            present = lengths > 0
            if present.any():
                counts = lengths[present]
                ends = np.cumsum(counts)
                index = np.repeat(starts[present] - (ends - counts), counts) + np.arange(int(ends[-1]))
                flat = np.asarray(arrays["samples"][index]).tolist()
                release(arrays["samples"])
                it = iter(flat)
                lists = [list(itertools.islice(it, n)) for n in counts.tolist()]
            else:
                lists = []
            chosen = iter(lists)
            for i, n in zip(where.tolist(), lengths.tolist()):
                out[i] = next(chosen) if n > 0 else ([] if n == 0 else None)
        return out

    # ----------------------------------------------------------------------- frames

    def frame(self, rows, series_columns: pd.DataFrame | None = None, samples: bool = True,
              stats=("ci_99_a", "ci_99_b", "repeat"), categorical: bool = False) -> pd.DataFrame:
        """A frame of ``rows`` (table order) with what load_results gives per row: machine,
        env_name, commit_hash, date, benchmark, params_key, value, status, unit, the ``stats``,
        ``samples`` (lists), and every column of ``series_columns`` (indexed by series id).
        ``categorical``: the text columns as pandas Categoricals (a few bytes a row instead of a
        pointer each: what a frame of every row needs at tens of millions of rows)."""
        rows = np.asarray(rows, dtype=np.int64)
        sid = self.series_of_row[rows]
        s = self.series

        def per_series(column: str):
            if not categorical:
                return s[column].to_numpy()[sid]
            codes, uniques = pd.factorize(s[column], use_na_sentinel=True)
            return pd.Categorical.from_codes(codes[sid], pd.Index(uniques, dtype=object))

        out = {"machine": per_series("machine"), "env_name": per_series("env_name")}
        hashes = None if categorical else np.empty(len(rows), dtype=object)
        hash_codes = np.zeros(len(rows) if categorical else 0, dtype=np.int32)  # codes into every run's commits
        all_hashes: dict[str, int] = {}
        dates = np.empty(len(rows), dtype="datetime64[ns]")
        order = np.zeros(len(rows), dtype=np.int64)
        for key, run in self.runs.items():
            inside = (rows >= run.start[0]) & (rows < run.start[-1])
            if inside.any():
                pos = self.positions(run, rows[inside])
                run_hashes = run.commits["commit_hash"].to_numpy()
                if categorical:
                    codes = np.array([all_hashes.setdefault(h, len(all_hashes)) for h in run_hashes], dtype=np.int32)
                    hash_codes[inside] = codes[pos]
                else:
                    hashes[inside] = run_hashes[pos]
                dates[inside] = run.commits["date"].dt.tz_localize(None).to_numpy()[pos]
                order[inside] = pos
        out["commit_hash"] = (pd.Categorical.from_codes(hash_codes, pd.Index(list(all_hashes), dtype=object))
                              if categorical else hashes)
        out["date"] = pd.DatetimeIndex(dates).tz_localize("UTC")
        out["benchmark"] = per_series("benchmark")
        out["params_key"] = per_series("params_key")
        out["value"] = self.value[rows]
        out["status"] = pd.Categorical.from_codes(self.status[rows], list(STATUSES))
        out["unit"] = per_series("unit")
        for name in stats:
            out[name] = self.column(name, rows)
        if samples:
            out["samples"] = self.samples(rows)
        frame = pd.DataFrame(out)
        frame["series"] = sid
        frame["row"] = rows  # this table's row number (to fetch samples or stats later)
        frame[ORDER] = order  # the commit's position in its run (asv_results.commit_order), as the gate sorts
        if series_columns is not None:
            extra = series_columns.reindex(sid)
            for col in series_columns.columns:
                frame[col] = extra[col].to_numpy()
        return frame
