"""Run the asv suite on this machine, for the current commit or for several: always this
checkout's suite, against each commit's fused_mlp.

    python -m benchmarks.run --machine h200-runner                       # HEAD, default grid
    python -m benchmarks.run --machine h200-runner --grid quick          # smoke run
    python -m benchmarks.run --machine h200-runner --commits A..B        # every commit of A..B, oldest first
    python -m benchmarks.run --machine h200-runner --commits "A B C"     # these commits
    python -m benchmarks.run --machine h200-runner --commits NEW         # those after the machine's newest result

It uses asv's `existing` environment: the Python given by --python (default: this one), with its
own torch and triton, so nothing is built or installed per commit and no network is needed. For
each commit, that commit's library (a temporary git worktree) goes first on the benchmark
processes' path (ASV_PYTHONPATH); the suite and its harness are this checkout's, as asv always
does, so the grids and the eager/torch.compile baselines stay fixed while the library changes.
What an older commit's library lacks is skipped with the reason. The machine is registered with
its GPU, driver, CUDA, torch and triton first. Results: results/<machine>/<commit>-existing-*.json.

`A..B` means what it means to asv (`git rev-list --first-parent`): the commits of B's own line
after A, not every commit merged in along the way. The machine name is a folder under results/:
letters, digits, '.', '_' and '-' only. results/benchmarks.json keeps the benchmarks this run did
not list and every parameter value of those it did (another grid's cases, older configs'), so
`asv publish` still graphs the committed history; when it is there but cannot be read, nothing
is run (exit 2) and it is left as it is, since asv would replace its list with this run's alone.
Without -b it runs every timing but not bench_compile's static metrics, which need no GPU and are
recorded on a machine of their own (`docs/compile-check.md`). Why each skipped or failed
value is NaN or null (asv stores no reason) goes to results/reasons/<machine>/<commit>.reasons
(benchmarks/skip_reasons.py).

Exit status: 0 when asv ran for every commit (a benchmark that failed is recorded as a failure,
and said here), 1 when asv itself failed for some commit, 2 for bad arguments (a bad machine
name, a --python without torch, triton or asv, commits that do not exist).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.checkout import uncommitted_code_changes
from benchmarks import skip_reasons
from benchmarks.harness import runner_state
from asv_results.companion_files import move_old_companions
from workload.grids import BENCH_ENV, GRID_ENV, GRIDS, OUTCOMES_ENV
from workload.kernel_configs import ARCH_ENV, arch_of_machine
from asv_results.safe_read import parse_json, read_json, read_json_text

REPO = Path(__file__).resolve().parents[1]
# Static compile metrics (bench_compile) need no GPU: a runner's time goes to the timings only.
TIMINGS_ONLY = r"^(?!bench_compile\.)"
ASV_SOME_BENCHMARKS_FAILED = 2  # asv run's exit status when it ran and some benchmark failed
# A machine name becomes results/<machine>/: one plain path component, nothing that climbs out.
MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _git(*args: str, repo: Path = REPO) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


NEW = "NEW"  # asv's name for "the commits since the last one measured"
NEW_AT_MOST = 50  # how far back NEW looks for a measured commit


def unmeasured_commits(results: Path, machine: str, repo: Path = REPO, at_most: int = NEW_AT_MOST) -> list[str]:
    """HEAD's first-parent commits after the newest one with a result file of `machine` in
    `results` (oldest first; HEAD alone when none of the last `at_most` has one). CI measures
    these, so a run that was cancelled while pending leaves no pushed commit unmeasured."""
    line = _git("rev-list", "--first-parent", f"--max-count={at_most}", "HEAD", repo=repo).split()
    measured = {p.name.split("-", 1)[0] for p in (Path(results) / machine).glob("*-*.json")}
    for i, sha in enumerate(line):
        if sha[:8] in measured:
            return list(reversed(line[:i]))
    return line[:1]


def resolve_commits(spec: str, repo: Path = REPO, results: Path | None = None, machine: str = "",
                    look_back: int = NEW_AT_MOST, oldest: int | None = None) -> list[str]:
    """Full hashes, oldest first: 'A..B' is a range, 'NEW' the commits since the machine's last
    result (unmeasured_commits, looking `look_back` commits back; only the `oldest` of them when
    given, so a long gap fills over several runs), anything else a list of commits."""
    if spec == NEW:
        commits = unmeasured_commits(results if results is not None else REPO / "results", machine, repo=repo,
                                     at_most=look_back)
        return commits[:oldest] if oldest else commits
    try:
        if ".." in spec:
            commits = _git("rev-list", "--reverse", "--first-parent", spec, repo=repo).split()  # as asv reads A..B
        else:
            commits = [_git("rev-parse", "--verify", "-q", f"{c}^{{commit}}", repo=repo) for c in spec.split()]
    except subprocess.CalledProcessError as e:
        raise ValueError(f"--commits {spec!r}: not commits of this repository ({e.stderr.strip() or e})") from None
    if not commits:
        raise ValueError(f"--commits {spec!r} names no commits")
    return commits


def check_machine_name(name: str) -> str | None:
    """Why `name` cannot be a machine (a folder under results/), or None when it can."""
    if not MACHINE_NAME.fullmatch(name) or ".." in name:
        return (f"--machine {name!r}: a machine name is a folder under results/; use letters, digits, "
                "'.', '_' and '-' (at most 100, starting with a letter or digit, no '..')")
    return None


def check_python(python: str) -> str | None:
    """Why `python` cannot run the suite (missing, or without torch, triton or asv), or None."""
    try:
        done = subprocess.run([python, "-c", "import asv, torch, triton"], capture_output=True, text=True,
                              timeout=300)
    except OSError as e:
        return f"--python {python!r} cannot be run ({e.strerror or e})"
    except subprocess.TimeoutExpired:
        return f"--python {python!r} did not import torch, triton and asv within 300 s"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return (f"--python {python!r} cannot run the suite: {lines[-1] if lines else 'exit ' + str(done.returncode)}"
                " (it needs torch, triton and asv; pass --python with the one that has them)")
    return None


def read_config(config: Path) -> tuple[object | None, str | None]:
    """(document, None) or (None, reason): asv.conf.json read through the one reader, its whole-line
    // comments dropped (asv's own extension of JSON)."""
    text, reason = read_json_text(config, Path(os.path.realpath(config)).parent)
    if reason is not None:
        return None, reason
    return parse_json("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


def check_config(config: Path) -> str | None:
    """Why `config` cannot be asv's configuration (missing, unreadable, not JSON with // comments),
    or None: checked before anything is registered or run."""
    doc, reason = read_config(config)
    if reason is not None:
        return f"--config {str(config)!r} is not asv's JSON configuration: {reason}"
    return None if isinstance(doc, dict) else f"--config {str(config)!r} is not a JSON object"


def results_dir(config: Path) -> Path:
    """The results folder asv.conf.json names (its // comments allowed), relative to the config."""
    doc, _ = read_config(config)
    name = doc.get("results_dir") if isinstance(doc, dict) else None
    return (config.parent / (name if isinstance(name, str) else "results")).resolve()


def read_benchmarks_json(path: Path) -> dict:
    """asv's benchmark list (results/benchmarks.json) as a dict; {} when missing or unreadable."""
    return listed_benchmarks(path)[0]


def listed_benchmarks(path: Path) -> tuple[dict, str | None]:
    """(asv's benchmark list, None), ({}, None) when there is none, or ({}, why) when the file is
    there but cannot be read or is not a list of benchmarks."""
    if not os.path.lexists(path):
        return {}, None
    doc, reason = read_json(path, path.parent)
    if reason is None and not isinstance(doc, dict):
        reason = f"top level is {type(doc).__name__}, expected an object"
    return (doc, None) if reason is None else ({}, reason)


def merge_benchmarks_json(before: dict, after: dict) -> dict:
    """What this run listed, with every parameter value listed before kept, and every benchmark
    listed before that it did not list.

    asv rewrites benchmarks.json with the suite and grid of the run that just ended, listing
    every benchmark it discovers with that grid's parameter values, and `asv publish` graphs
    only the values listed there: a tiny-grid run would hide the committed history of every
    other case. So a benchmark both list (with the same parameter names) takes this run's entry
    with each parameter's values the union of both, the earlier ones first (asv reads a result
    file's values by value, so a value no result has is an empty line, never a wrong one)."""
    merged = {name: entry for name, entry in before.items() if name != "version"}
    for name, entry in after.items():
        old = merged.get(name)
        if name != "version" and isinstance(old, dict) and isinstance(entry, dict):
            entry = {**entry, "params": union_params(old, entry)}
        merged[name] = entry
    if "version" in after or "version" in before:
        merged["version"] = after.get("version", before.get("version"))
    return dict(sorted(merged.items()))


def union_params(old: dict, new: dict) -> list:
    """`new`'s parameter values with `old`'s kept (per parameter, old ones first); `new`'s
    alone when the two do not name the same parameters."""
    old_params, new_params = old.get("params"), new.get("params")
    if (old.get("param_names") != new.get("param_names") or not isinstance(old_params, list)
            or not isinstance(new_params, list) or len(old_params) != len(new_params)
            or not all(isinstance(values, list) for values in old_params + new_params)):
        return new_params
    return [list(dict.fromkeys([*before_values, *now_values]))
            for before_values, now_values in zip(old_params, new_params)]


def register_machine(python: str, machine: str) -> int:
    """asv's machine entry with the GPU, driver, CUDA, torch and triton (harness.environment)."""
    return subprocess.run([python, "-m", "benchmarks.harness.environment", "--machine", machine], cwd=REPO).returncode


# asv run in an existing environment logs "For <project> commit <X>:" with X its branch's head
# (asv 0.6.6 takes the commits it logs from the config's branches, whatever --set-commit-hash
# says), so every commit of a --commits run read as the same one: the line names the commit measured.
ASV_COMMIT_LINE = re.compile(r"(For \S+ commit )[0-9a-f]{7,40}(?: <[^>]*>)?")


def asv_log_line(line: str, commit: str) -> str:
    """`line` of asv's output, its "For <project> commit ..." naming `commit` instead."""
    return ASV_COMMIT_LINE.sub(lambda m: m.group(1) + commit[:8], line, count=1)


def run_naming_commit(cmd: list[str], env: dict, commit: str) -> int:
    """asv run (`cmd`), its output passed on line by line as it comes, its commit line naming `commit`."""
    with subprocess.Popen(cmd, cwd=REPO, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, text=True,
                          errors="replace") as proc:
        for line in proc.stdout:
            sys.stdout.write(asv_log_line(line, commit))
            sys.stdout.flush()
    return proc.returncode


def run_asv(python: str, config: Path, machine: str, commit: str, library_path: Path, extra: list[str]) -> int:
    env = {**os.environ, "ASV_PYTHONPATH": os.pathsep.join(
        [str(library_path), *filter(None, [os.environ.get("ASV_PYTHONPATH")])])}
    if "-b" in extra:  # a case's first process measures only the implementations this run selects
        env[BENCH_ENV] = extra[extra.index("-b") + 1]
    cmd = [python, "-m", "asv", "--config", str(config), "run", "-E", f"existing:{python}",
           "--set-commit-hash", commit, "--record-samples", "--machine", machine, *extra]
    print("==", commit, flush=True)
    with tempfile.TemporaryDirectory(prefix="fused-mlp-reasons-") as outcomes, \
            tempfile.TemporaryDirectory(prefix="fused-mlp-state-") as states:
        env[OUTCOMES_ENV] = outcomes  # each combination files why it was skipped or failed
        env[runner_state.BENCHMARKS_ENV] = states  # ... and the GPU's state around its measuring pass
        # The runner's state before and after (clocks, power, throttling, versions), beside the results.
        status = runner_state.recorded_run(lambda: run_naming_commit(cmd, env, commit), python,
                                           results_dir(config) / machine, commit, cwd=REPO,
                                           benchmark_states=Path(states))
        entries, measured = skip_reasons.collect(Path(outcomes))
    if entries or measured:  # asv stores no reasons: kept beside the results (benchmarks/skip_reasons.py)
        skip_reasons.merge(results_dir(config), machine, commit, entries, measured)
    return status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="runner name; asv keeps one results folder per machine")
    parser.add_argument("--grid", default=os.environ.get(GRID_ENV, "default"), choices=GRIDS)
    parser.add_argument("--commits", help="'A..B' (a range), 'A B C' (commits) or NEW (every first-parent commit "
                                          "after the machine's newest result); default: HEAD, which must be clean")
    parser.add_argument("--look-back", type=int, default=NEW_AT_MOST, metavar="N",
                        help=f"--commits NEW: how many first-parent commits back to look for a measured one "
                             f"(default {NEW_AT_MOST}; none within: HEAD alone)")
    parser.add_argument("--at-most", type=int, metavar="K",
                        help="--commits NEW: measure only the oldest K unmeasured commits (a long gap then fills "
                             "over several runs, each within its job's time)")
    parser.add_argument("--python", default=sys.executable, help="the Python with torch, triton and asv")
    parser.add_argument("--config", type=Path, default=REPO / "asv.conf.json")
    parser.add_argument("--bench", "-b", default=TIMINGS_ONLY,
                        help="only benchmarks matching this regex (asv run -b); default: every timing, "
                             "not the static compile metrics (-b KernelResources records those)")
    parser.add_argument("--prepared", action="store_true",
                        help="the caller checked --python and registered the machine (tools/gpu_runner/session.sh "
                             "does it once per session with --prepare-only): skip both, two torch imports per call")
    parser.add_argument("--prepare-only", action="store_true",
                        help="check --python and register the machine with asv, then stop (no asv run)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    problem = (check_machine_name(args.machine) or check_config(args.config)
               or (None if args.prepared else check_python(args.python)))
    checked = time.perf_counter() - started
    if problem:
        parser.error(problem)
    if args.prepare_only:
        started = time.perf_counter()
        prepared = prepare_machine(args.python, args.machine, args.grid)
        # for the GPU session's measured inputs (benchmarks.measured_inputs): the check holds its first torch import
        print(f"measured: check_python_s={checked:.2f} register_s={time.perf_counter() - started:.2f}", flush=True)
        return 0 if prepared else 1
    if args.commits:
        try:
            if args.look_back < 1 or (args.at_most is not None and args.at_most < 1):
                parser.error("--look-back and --at-most take a whole number of commits, at least 1")
            commits = resolve_commits(args.commits, results=results_dir(args.config), machine=args.machine,
                                      look_back=args.look_back, oldest=args.at_most)
        except ValueError as e:
            parser.error(str(e))
        if not commits:
            print(f"--commits {NEW}: every commit up to HEAD has results for {args.machine!r}; nothing to run")
            return 0
    else:
        if uncommitted_code_changes():
            parser.error("the working tree has uncommitted changes: results would be filed under HEAD but "
                         "measure other code; commit or stash them first (or use --commits)")
        commits = [_git("rev-parse", "HEAD")]

    arch = arch_of_machine(args.machine)
    if arch is not None:  # a compile-metrics machine: bench_compile records its architecture
        os.environ[ARCH_ENV] = arch
    if args.prepared:
        os.environ[GRID_ENV] = args.grid
    elif not prepare_machine(args.python, args.machine, args.grid):
        return 1
    return measure_commits(args.python, args.config, args.machine, commits, args.bench, checkout=bool(args.commits))


def prepare_machine(python: str, machine: str, grid: str) -> bool:
    """Select the grid (for this process and the asv runs it starts) and register the machine
    with asv; False (said on stderr) when asv could not register it."""
    os.environ[GRID_ENV] = grid
    if register_machine(python, machine) != 0:
        print(f"could not register machine {machine!r} with asv (is asv installed for {python}?)", file=sys.stderr)
        return False
    return True


def measure_commits(python: str, config: Path, machine: str, commits: list[str], bench: str,
                    checkout: bool = True) -> int:
    """One asv run per commit (full hashes, oldest first) on a prepared machine (check_python,
    prepare_machine): each commit's library from a temporary worktree (``checkout``), or this
    checkout's for a single HEAD run; the exit status main returns."""
    extra = ["-b", bench]
    move_old_companions(results_dir(config) / machine)  # runner state asv tried to load as results
    benchmarks_json = results_dir(config) / "benchmarks.json"
    listed_before, unreadable = listed_benchmarks(benchmarks_json)
    if unreadable:  # asv would replace the history's list with this run's alone: refuse, touch nothing
        print(f"{benchmarks_json} cannot be read ({unreadable}); asv would replace the benchmarks it lists "
              "with this run's only, so nothing was run: repair it (git checkout it) and run again", file=sys.stderr)
        return 2

    failed, partial = [], []
    if not checkout:
        statuses = {commits[0]: run_asv(python, config, machine, commits[0], REPO, extra)}
    else:
        statuses = {}
        with tempfile.TemporaryDirectory(prefix="fused-mlp-worktree-") as tmp:
            worktree = Path(tmp) / "checkout"
            try:
                for sha in commits:
                    _git("worktree", "add", "--detach", "--force", str(worktree), sha)
                    statuses[sha] = run_asv(python, config, machine, sha, worktree, extra)
                    _git("worktree", "remove", "--force", str(worktree))
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
    listed_now = read_benchmarks_json(benchmarks_json)
    if listed_before and listed_now:  # whole or not at all: a run killed here leaves the old list, never half
        tmp = benchmarks_json.with_name(benchmarks_json.name + ".tmp")
        tmp.unlink(missing_ok=True)  # a link left there is not written through
        tmp.write_text(json.dumps(merge_benchmarks_json(listed_before, listed_now), indent=4) + "\n")
        tmp.replace(benchmarks_json)
    for sha, status in statuses.items():
        if status == ASV_SOME_BENCHMARKS_FAILED:
            partial.append(sha)
        elif status != 0:
            failed.append(sha)
    if partial:
        print(f"some benchmarks failed (recorded as failures) at {', '.join(s[:12] for s in partial)}", file=sys.stderr)
    if failed:
        print(f"asv did not run at {', '.join(s[:12] for s in failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
