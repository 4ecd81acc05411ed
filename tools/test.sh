#!/usr/bin/env bash
# Install everything the tests need into ./.venv (a fresh machine is fine), then run them.
# Browser tests need Debian's chromium + chromium-driver; as root this installs them.
# torch==2.13.0 goes first: it is a CPU build on local disk, and with it in place nothing
# below pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
# The dashboard's browser tests drive Debian's chromium through its chromedriver; actionlint
# checks the workflow's scripts with shellcheck when it is there.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || ! command -v shellcheck >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver shellcheck >/dev/null
  else
    echo "chromium, chromium-driver or shellcheck is missing (sudo apt-get install chromium chromium-driver" \
      "shellcheck); browser tests will skip, workflow scripts go unchecked by shellcheck" >&2
  fi
fi
export DASH_TEST_CHROMEPATH=${DASH_TEST_CHROMEPATH:-/usr/bin/chromium}
# --install-only: make .venv and stop; --installed: .venv is made, run the tests (.ci/run does
# both, to start the compile check between them).
step=${1:-}
case "$step" in --install-only|--installed) shift ;; esac
if [ "$step" != --installed ]; then
  PYTHON=${PYTHON:-python3}
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet torch==2.13.0
  .venv/bin/python -m pip install --quiet -e ".[test]"
fi
[ "$step" = --install-only ] && exit 0
# One pytest-xdist worker per CPU; each test file stays on one worker (tests/xdist_scheduling.py).
# Arguments after these win: `-n 0` runs in this one process, `-n 4` sets the workers.
exec .venv/bin/python -m pytest -n logical --dist loadfile "$@"
