#!/usr/bin/env bash
# Here, before a GPU session: pack what the device machine can neither fetch nor gets copied.
#
#   tools/gpu_runner/prepare_carry.sh
#
#   .whl/               asv and the packages it needs, as wheels for the device's Python 3.12
#   .carry/repo.bundle  the git history: the device gets the working tree without .git, and
#                       asv (--set-commit-hash) and benchmarks.run (worktrees) need it
#   .carry/git.deb      git itself, in case the device image has none; session.sh
#                       unpacks it under /tmp only when `git --version` fails there
#
# Both folders are ignored by git here (.git/info/exclude): name them in the device call's
# carry, e.g. carry [".whl", ".carry"]. Commit first: the bundle holds commits, not edits.
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)  # .git may be a file (a worktree)
mkdir -p "$(dirname "$exclude")"
for pattern in /.whl/ /.carry/; do
  grep -qxF "$pattern" "$exclude" 2>/dev/null || echo "$pattern" >> "$exclude"
done
ls .whl/asv-*.whl .whl/pytest-*.whl >/dev/null 2>&1 || bash tools/gpu_runner/fetch_wheels.sh .whl 3.12 >/dev/null
rm -rf .carry
mkdir -p .carry
git bundle create -q .carry/repo.bundle --all
if (cd .carry && apt-get download -q git >/dev/null 2>&1); then
  mv .carry/git_*.deb .carry/git.deb
else
  echo "warning: could not download git's .deb (apt-get update first?); the device must have git" >&2
fi
du -sh .whl .carry
