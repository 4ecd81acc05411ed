#!/usr/bin/env bash
# Download the wheels asv (and pytest, for the session's native kernel tests) needs, for a GPU runner with no network (run this where there is one).
#
#   tools/gpu_runner/fetch_wheels.sh [DIR] [PYTHON_VERSION]      # default: wheelhouse/ 3.11
#
# Then copy DIR to the runner and: pip install --no-index --find-links DIR asv
# torch and triton are not fetched: the runner's Python already has them.
set -euo pipefail
dir="${1:-wheelhouse}" py="${2:-3.11}"
mkdir -p "$dir"
# importlib_metadata < 9: 10.x needs a lazy_importer package that is not on the runner.
python3 -m pip download --dest "$dir" --only-binary=:all: --python-version "$py" \
  asv==0.6.6 asv_runner==0.3.2 json5 Pympler tabulate virtualenv distlib platformdirs \
  "importlib_metadata<9" build pyproject_hooks packaging setuptools wheel nvidia-ml-py \
  pytest iniconfig pluggy  # the native kernel tests the session runs first
# The Liger peers: pure Python + Triton. --no-deps: its torch/triton requirement would pull a
# CUDA torch; the runner's own torch and triton serve it (pip install --no-deps there too).
python3 -m pip download --dest "$dir" --only-binary=:all: --python-version "$py" --no-deps liger-kernel==0.8.5
ls "$dir"
