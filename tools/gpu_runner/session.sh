#!/usr/bin/env bash
# Everything a GPU session does, in one call (device time is scarce):
#   1. asv from carried wheels (.whl/, made here by tools/gpu_runner/prepare_carry.sh)
#   2. the kernel tests that force each GEMM variant, natively (the first real run of the TMA
#      path: tests/test_persistent.py), then correctness at real sizes for every op x dtype +
#      first fused/peer ratios (benchmarks.gpu_check)
#   3. the asv suite for each given commit (benchmarks.run: this checkout's suite, each commit's library)
#   4. a profile pass of the quick grid (benchmarks.profile --save results/profiles)
#   5. results/ packed into $OUT/results.tgz, logs into $OUT
#
#   tools/gpu_runner/session.sh --machine h200 --grid default --commits "SHA1 SHA2 SHA3"
#   (first, here: tools/gpu_runner/prepare_carry.sh; then carry .whl and .carry in the device call)
#   tools/gpu_runner/session.sh --machine cpu-test --grid tiny --small      # rehearsal on a CPU
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu_session_out}
mkdir -p "$OUT"
machine="" grid="default" commits="" small=""
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) machine="$2"; shift 2 ;;
    --grid) grid="$2"; shift 2 ;;
    --commits) commits="$2"; shift 2 ;;
    --small) small="--small"; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -n "$machine" ] || { echo "--machine NAME is required" >&2; exit 2; }
export PYTHONUNBUFFERED=1
log() { echo "== $(date +%T) $*" | tee -a "$OUT/session.log"; }

source tools/gpu_runner/restore_git.sh || exit 1  # .git and git itself from .carry/, where the device lacks them

if [ -d .whl ]; then
  log "installing asv and pytest from .whl/"
  python3 -m pip install -q --no-index --find-links .whl asv pytest 2>&1 | tail -3
fi
python3 -c "import asv, torch, triton; print('asv', asv.__version__, 'torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$OUT/session.log" || exit 1

log "native kernel tests (tests/test_persistent.py, at most 4 min)"
timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_persistent.py >"$OUT/native_tests.log" 2>&1
tests_rc=$?
tail -3 "$OUT/native_tests.log" | tee -a "$OUT/session.log"

log "gpu_check"
python3 -m benchmarks.gpu_check --out "$OUT" $small 2>&1 | tee "$OUT/gpu_check.log"
check_rc=${PIPESTATUS[0]}

log "asv run ${commits:-HEAD} ($grid)"
python3 -m benchmarks.run --machine "$machine" --grid "$grid" ${commits:+--commits "$commits"} >>"$OUT/asv.log" 2>&1 \
  || log "benchmarks.run exited $?"

log "profile pass (quick grid)"
python3 -m benchmarks.profile --grid "$( [ -n "$small" ] && echo tiny || echo quick )" --machine "$machine" \
  --save results/profiles 2>&1 | tail -3 | tee -a "$OUT/session.log"

tar czf "$OUT/results.tgz" results
log "done; native tests exit $tests_rc; gpu_check exit $check_rc; results packed into $OUT/results.tgz"
tail -25 "$OUT/gpu_check.log"
exit "$check_rc"
