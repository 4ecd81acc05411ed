#!/usr/bin/env bash
# Run the asv suite on this machine for the current commit, or for each commit of a range.
#
#   tools/asv_run.sh --machine h200-runner                      # HEAD, default grid
#   tools/asv_run.sh --machine h200-runner --grid quick         # smoke run
#   tools/asv_run.sh --machine h200-runner --commits A..B       # every commit in A..B (oldest first)
#
# Uses asv's `existing` environment: the Python running this script, with its own torch and
# triton (the GPU runner has no network, so nothing is built or installed per commit). For a
# range, each commit is checked out into a temporary git worktree and put first on the
# benchmark processes' path (ASV_PYTHONPATH); the benchmark code itself comes from the current
# checkout, as asv always does. Results go to results/<machine>/<commit>-existing-....json.
set -euo pipefail
cd "$(dirname "$0")/.."

machine="" grid="${FUSED_MLP_GRID:-default}" commits="" python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) machine="$2"; shift 2 ;;
    --grid) grid="$2"; shift 2 ;;
    --commits) commits="$2"; shift 2 ;;
    *) echo "unknown argument: $1 (expected --machine NAME [--grid G] [--commits A..B])" >&2; exit 2 ;;
  esac
done
[ -n "$machine" ] || { echo "--machine NAME is required (asv keeps one results folder per machine)" >&2; exit 2; }

if [ -z "$commits" ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "the working tree has uncommitted changes: results would be filed under HEAD but measure other code;" >&2
  echo "commit or stash them first" >&2
  exit 2
fi

export FUSED_MLP_GRID="$grid"
"$python" tools/asv_machine.py --machine "$machine"
run_one() {  # $1 = commit
  "$python" -m asv run -E "existing:$(command -v "$python")" --set-commit-hash "$1" \
    --record-samples --machine "$machine" || [ $? -eq 2 ]  # 2 = some benchmark failed: keep going, it is recorded
}

if [ -z "$commits" ]; then
  # asv runs benchmarks from a temp dir: put this checkout's fused_mlp first on their path.
  ASV_PYTHONPATH="$PWD${ASV_PYTHONPATH:+:$ASV_PYTHONPATH}" run_one "$(git rev-parse HEAD)"
  exit 0
fi

worktree=$(mktemp -d)
trap 'git worktree remove --force "$worktree" 2>/dev/null || true' EXIT
for sha in $(git rev-list --reverse "$commits"); do
  git worktree remove --force "$worktree" 2>/dev/null || true
  git worktree add --detach --force "$worktree" "$sha" >/dev/null
  echo "== $sha"
  ASV_PYTHONPATH="$worktree${ASV_PYTHONPATH:+:$ASV_PYTHONPATH}" run_one "$sha"
done
