"""Run the asv suite on this machine, for the current commit or for several: always this
checkout's suite, against each commit's fused_mlp.

    python -m benchmarks.run --machine h200-runner                       # HEAD, default grid
    python -m benchmarks.run --machine h200-runner --grid quick          # smoke run
    python -m benchmarks.run --machine h200-runner --commits A..B        # every commit of A..B, oldest first
    python -m benchmarks.run --machine h200-runner --commits "A B C"     # these commits

It uses asv's `existing` environment: the Python given by --python (default: this one), with its
own torch and triton, so nothing is built or installed per commit and no network is needed. For
each commit, that commit's library (a temporary git worktree) goes first on the benchmark
processes' path (ASV_PYTHONPATH); the suite and its harness are this checkout's, as asv always
does, so the grids and the eager/torch.compile baselines stay fixed while the library changes.
What an older commit's library lacks is skipped with the reason. The machine is registered with
its GPU, driver, CUDA, torch and triton first. Results: results/<machine>/<commit>-existing-*.json.

Exit status: 0 when asv ran for every commit (a benchmark that failed is recorded as a failure,
and said here), 1 when asv itself failed for some commit, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .checkout import uncommitted_code_changes
from .harness.grids import GRID_ENV, GRIDS

REPO = Path(__file__).resolve().parents[1]
ASV_SOME_BENCHMARKS_FAILED = 2  # asv run's exit status when it ran and some benchmark failed


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def resolve_commits(spec: str) -> list[str]:
    """Full hashes, oldest first: 'A..B' is a range, anything else a list of commits."""
    try:
        if ".." in spec:
            commits = _git("rev-list", "--reverse", spec).split()
        else:
            commits = [_git("rev-parse", "--verify", "-q", f"{c}^{{commit}}") for c in spec.split()]
    except subprocess.CalledProcessError as e:
        raise ValueError(f"--commits {spec!r}: not commits of this repository ({e.stderr.strip() or e})") from None
    if not commits:
        raise ValueError(f"--commits {spec!r} names no commits")
    return commits


def run_asv(python: str, config: Path, machine: str, commit: str, library_path: Path, extra: list[str]) -> int:
    env = {**os.environ, "ASV_PYTHONPATH": os.pathsep.join(
        [str(library_path), *filter(None, [os.environ.get("ASV_PYTHONPATH")])])}
    cmd = [python, "-m", "asv", "--config", str(config), "run", "-E", f"existing:{python}",
           "--set-commit-hash", commit, "--record-samples", "--machine", machine, *extra]
    print("==", commit, flush=True)
    return subprocess.run(cmd, cwd=REPO, env=env).returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="runner name; asv keeps one results folder per machine")
    parser.add_argument("--grid", default=os.environ.get(GRID_ENV, "default"), choices=GRIDS)
    parser.add_argument("--commits", help="'A..B' (a range) or 'A B C' (commits); default: HEAD, which must be clean")
    parser.add_argument("--python", default=sys.executable, help="the Python with torch, triton and asv")
    parser.add_argument("--config", type=Path, default=REPO / "asv.conf.json")
    parser.add_argument("--bench", "-b", help="only benchmarks matching this regex (asv run -b)")
    args = parser.parse_args(argv)

    if args.commits:
        try:
            commits = resolve_commits(args.commits)
        except ValueError as e:
            parser.error(str(e))
    else:
        if uncommitted_code_changes():
            parser.error("the working tree has uncommitted changes: results would be filed under HEAD but "
                         "measure other code; commit or stash them first (or use --commits)")
        commits = [_git("rev-parse", "HEAD")]

    os.environ[GRID_ENV] = args.grid
    register = subprocess.run([args.python, "-m", "benchmarks.harness.environment", "--machine", args.machine],
                              cwd=REPO)
    if register.returncode != 0:
        print(f"could not register machine {args.machine!r} with asv (is asv installed for {args.python}?)",
              file=sys.stderr)
        return 1
    extra = ["-b", args.bench] if args.bench else []

    failed, partial = [], []
    if not args.commits:
        statuses = {commits[0]: run_asv(args.python, args.config, args.machine, commits[0], REPO, extra)}
    else:
        statuses = {}
        with tempfile.TemporaryDirectory(prefix="fused-mlp-worktree-") as tmp:
            worktree = Path(tmp) / "checkout"
            try:
                for sha in commits:
                    _git("worktree", "add", "--detach", "--force", str(worktree), sha)
                    statuses[sha] = run_asv(args.python, args.config, args.machine, sha, worktree, extra)
                    _git("worktree", "remove", "--force", str(worktree))
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
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
