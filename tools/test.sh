#!/usr/bin/env bash
# Install everything the tests need into ./.venv (a fresh machine is fine), then run them.
# torch==2.13.0 goes first: it is a CPU build on local disk, and with it in place nothing
# below pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -e ".[test]"
exec .venv/bin/python -m pytest "$@"
