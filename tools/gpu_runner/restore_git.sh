# shellcheck shell=bash
# Sourced by tools/gpu_runner/session.sh. The device gets this working tree without .git, and perhaps
# has no git: restore both from .carry/ (made here by tools/gpu_runner/prepare_carry.sh), as asv
# (--set-commit-hash) and benchmarks.run (worktrees) name and check out commits.
# Returns non-zero when the history cannot be had.
_say() { if declare -F log >/dev/null; then log "$@"; else echo "== $(date +%T) $*"; fi; }  # session.sh's log
if ! git --version >/dev/null 2>&1 && [ -f .carry/git.deb ]; then
  dpkg -x .carry/git.deb /tmp/carried-git  # under /tmp: unpacking into / can break the machine
  export PATH="/tmp/carried-git/usr/bin:$PATH" GIT_EXEC_PATH=/tmp/carried-git/usr/lib/git-core \
    GIT_TEMPLATE_DIR=/tmp/carried-git/usr/share/git-core/templates
  _say "using git from .carry/git.deb: $(git --version)"
fi
if [ ! -e .git ] && [ -f .carry/repo.bundle ]; then
  _head=$(git bundle list-heads .carry/repo.bundle HEAD | cut -d' ' -f1)
  # HEAD detached at the bundled commit; the index rebuilt from it, the files left as they are.
  # A scratch initial branch, so that fetching every bundled branch (master too) is allowed.
  if git init -q --initial-branch=restore-from-bundle && git fetch -q .carry/repo.bundle '+refs/*:refs/*' \
      && git update-ref --no-deref HEAD "$_head" && git reset -q; then
    _say "restored .git from .carry/repo.bundle at ${_head:0:12}"
  else
    rm -rf .git  # half made: a rerun must try again, not find a .git without history
    _say "could not restore .git from .carry/repo.bundle"
  fi
fi
# The copy may have lost executable bits: a mode change is not a code change.
[ -e .git ] && git config core.fileMode false
git rev-parse --verify -q HEAD >/dev/null \
  || { _say "no git history here: run tools/gpu_runner/prepare_carry.sh and carry .carry"; false; }
