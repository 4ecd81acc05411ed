#!/usr/bin/env bash
# The compile check (python -m fused_mlp.aot) under a given Triton, in its own venv: the GPU
# runner has Triton 3.6.0, CPU machines get the newest; CI checks both.
#
#   bash tools/compile_check.sh 3.6.0 --arch sm_90        # .venv-triton-3.6.0/, then the check
#   bash tools/compile_check.sh current --arch sm_90      # the Triton in .venv/ (tools/test.sh made it)
#   bash tools/compile_check.sh 3.6.0 --setup-only        # only make the venv (CI does it beside the tests)
#
# torch==2.13.0 first (the CPU build on local disk; a bare torch could pull a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?"usage: tools/compile_check.sh TRITON_VERSION|current [fused_mlp.aot arguments]"}
shift
if [ "$version" = current ]; then
  python=.venv/bin/python
else
  venv=.venv-triton-$version
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet torch==2.13.0
  "$venv/bin/python" -m pip install --quiet "triton==$version" numpy
  python=$venv/bin/python
  [ "${1:-}" = --setup-only ] && exit 0
fi
[ -x "$python" ] || { echo "no $python: run tools/test.sh first" >&2; exit 2; }
# The check compiles this checkout's kernels; TRITON_INTERPRET would make them uncompilable.
exec env -u TRITON_INTERPRET PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$python" -m fused_mlp.aot "$@"
