#!/usr/bin/env bash
# One call on a GPU machine without network, sized for a time limit (default 540 s, under a
# 600 s call): what matters most runs first, every stage has its own timeout, and an exit trap
# packs whatever exists (results/, logs, gpu_check.json, the stage table) into $OUT whatever
# happens (a stage cut short, a crash, the call's own limit).
#
#   0. setup  git restored, asv and pytest from .whl/, once `benchmarks.run --prepare-only` (the
#             Python can run the suite, the machine is registered with asv)
#   1. quick  asv quick grid at HEAD, bench_device, bench_ops, bench_training and bench_hot, one asv
#             run per class; copy_results copies results/ into $OUT/results/ as each class ends, so
#             a cut-short stage (or a kill of the whole call) keeps the classes done
#   2. check  benchmarks.gpu_check, bf16 first, gpu_check.json rewritten after every case
#   3. native the kernel tests natively: GEMM variants forced, FP8, backward
#   4. rest   the asv --grid (default: default) at HEAD or --commits, class by class, as time allows;
#             --part K: only the Kth of rest_parts (below), the default grid split so that each
#             part's call fits 80 % of a 600 s call with cold caches (benchmarks.session_cost)
#   5. profile a profile pass of the quick grid
#
# Each call runs some of these (always setup first): the first call first_call_stages, the call
# `--part K` part_stages[K-1] (below), --stages any others.
#
#   tools/gpu_runner/session.sh --machine h200                      # the first call: quick, check, profile
#   tools/gpu_runner/session.sh --machine h200 --part 1             # the later calls: parts 1 to 4
#   tools/gpu_runner/session.sh --machine h200 --stages rest --commits "A B" [--grid default] [--budget 540]
#   TRITON_INTERPRET=1 tools/gpu_runner/session.sh --machine cpu-test --grid tiny --small   # rehearsal
#   (first, here: tools/gpu_runner/prepare_carry.sh; then carry .whl and .carry in the device call)
#
# Exit status: gpu_check's (0 correct, 1 a wrong fused result), 3 when it did not finish, 2 for
# bad arguments, 4 when setup failed (git not restored, or the Python cannot run the suite or
# register the machine: nothing was measured). $OUT/stages.tsv: stage, status, seconds, limit, then
# a `measured:NAME` row per input the time model guesses (benchmarks.measured_inputs, from the
# first calls filed in $OUT/first_calls and setup's check), for the next session's model.
# shellcheck disable=SC2317  # the stage functions run through `stage`, as commands of their own
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/gpu_session_out}
machine="" grid="default" commits="" small="" budget=540 stages="" part=""
# The classes, one benchmarks.run (and asv run) each; the rest stage's in parts, one call each
# (--part K): with cold caches and the pessimistic compile times of benchmarks.suite_cost, each
# part's call (setup, then its classes) is modelled at most 80 % of a 600 s call
# (python -m benchmarks.session_cost --part K; tests/test_session_cost.py holds every part to it).
# A regex may select some implementations of a class: asv matches a parameterized benchmark as
# name(param reprs), e.g. bench_training.GatedMLPTraining.track_latency_us('gated_mlp M=8192 ...',
# 'compile_max_autotune', 'full'). GatedMLPTraining is split so: its max-autotune combinations (4
# GEMM shapes to tune, trained) are part 4, the rest of it part 3. No spaces in a regex (\s).
quick_classes='bench_device\. bench_ops\.GatedMLP\. bench_ops\.NarrowMLP\. bench_ops\.LinearAct\. bench_training\. bench_hot\.'
rest_parts=('bench_ops\.GatedMLP\.'
            'bench_ops\.LinearAct\. bench_ops\.NarrowMLP\. bench_training\.LinearActTraining\. bench_training\.NarrowMLPTraining\.'
            'bench_training\.GatedMLPTraining\.\w+\(\W[^,]+,\s(?!\Wcompile_max_autotune\W) bench_device\. bench_hot\.'
            'bench_training\.GatedMLPTraining\.\w+\(\W[^,]+,\s\Wcompile_max_autotune\W')
# What each call runs when --stages does not say: every call's stages (setup's 30 s included) are
# modelled within 80 % of a 600 s call (python -m benchmarks.session_cost [--part K], held there by
# tests/test_session_cost.py). The native tests (105 s) go with part 3, the part with most room.
first_call_stages="quick,check,profile"
part_stages=("rest" "rest" "native,rest" "rest")
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) machine="${2:-}"; shift 2 || { echo "--machine needs a value" >&2; exit 2; } ;;
    --grid) grid="${2:-}"; shift 2 || { echo "--grid needs a value" >&2; exit 2; } ;;
    --commits) commits="${2:-}"; shift 2 || { echo "--commits needs a value" >&2; exit 2; } ;;
    --budget) budget="${2:-}"; shift 2 || { echo "--budget needs a value" >&2; exit 2; } ;;
    --stages) stages="${2:-}"; shift 2 || { echo "--stages needs a value" >&2; exit 2; } ;;
    --part) part="${2:-}"; shift 2 || { echo "--part needs a value" >&2; exit 2; } ;;
    --small) small="--small"; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -n "$machine" ] || { echo "--machine NAME is required" >&2; exit 2; }
if ! [[ "$budget" =~ ^[0-9]+$ ]] || [ "$budget" -lt 30 ]; then
  echo "--budget: whole seconds, at least 30" >&2; exit 2
fi
if [ -n "$part" ] && { ! [[ "$part" =~ ^[0-9]+$ ]] || [ "$part" -lt 1 ] || [ "$part" -gt "${#rest_parts[@]}" ]; }; then
  echo "--part: 1 to ${#rest_parts[@]} (the rest stage's parts)" >&2; exit 2
fi
[ -n "$stages" ] || stages=${part:+${part_stages[$((part - 1))]}}
stages=${stages:-$first_call_stages}
for s in ${stages//,/ }; do
  case "$s" in quick|check|native|rest|profile) ;; *) echo "--stages: unknown stage $s" >&2; exit 2 ;; esac
done
case ",$stages," in
  *",rest,"*) ;;
  *) [ -z "$commits" ] || { echo "--commits: only the rest stage runs them; add rest to --stages" >&2; exit 2; } ;;
esac
rest_classes=${part:+${rest_parts[$((part - 1))]}}
rest_classes=${rest_classes:-${rest_parts[*]}}
mkdir -p "$OUT/first_calls" || { echo "cannot make OUT=$OUT" >&2; exit 2; }
# each measuring pass times its first call there (benchmarks/harness/first_calls.py)
export FUSED_MLP_FIRST_CALLS="$OUT/first_calls"
export PYTHONUNBUFFERED=1
start=$SECONDS
# A stage's seconds in stages.tsv to 0.1 s ($EPOCHREALTIME, bash 5): whole seconds ($SECONDS) are
# +-1 s, 20 % of a 5 s setup, more than the 15 % the cost model is judged by
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }  # microseconds (the locale may write a comma)
seconds_since() { local d=$(( $(now_us) - $1 )); printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000)); }
start_us=$(now_us)
RESERVE=${SESSION_RESERVE_S:-15}  # seconds kept for packing
log() { echo "== $(date +%T) +$((SECONDS - start))s $*" | tee -a "$OUT/session.log"; }
printf 'stage\tstatus\tseconds\tlimit_s\n' > "$OUT/stages.tsv"
check_rc=3

pack() {
  tar czf "$OUT/results.tgz" results 2>/dev/null
  python3 -m benchmarks.measured_inputs --first-calls "$OUT/first_calls" --log "$OUT/session.log" >> "$OUT/stages.tsv" \
    2>"$OUT/measured_inputs.log" || log "no measured inputs: see $OUT/measured_inputs.log"
  log "packed results/ into $OUT/results.tgz; stages:"
  column -t -s $'\t' "$OUT/stages.tsv" 2>/dev/null | tee -a "$OUT/session.log" || cat "$OUT/stages.tsv"
}
trap pack EXIT

left() { echo $((budget - (SECONDS - start) - RESERVE)); }

# kill_session SID: every process of session SID, asv's forkserver and benchmark processes included
# (asv puts each in a process group of its own, so a process-group kill misses them; a session
# holds them all). Read from /proc: the device image may have no procps.
kill_session() {
  local sid=$1 stat line fields
  [ -n "$sid" ] || return 0
  for stat in /proc/[0-9]*/stat; do
    read -r line < "$stat" 2>/dev/null || continue
    read -ra fields <<< "${line##*) }"  # after "pid (comm) ": state ppid pgrp session ...
    # not the caller itself (the watchdog below ends the session it is in)
    [ "${fields[3]:-}" = "$sid" ] && [ "${line%% *}" != "$BASHPID" ] && kill -KILL "${line%% *}" 2>/dev/null
  done
  return 0
}
# The stage's own session: a watchdog inside it ends the whole session when this script is gone
# (the call's `timeout -s KILL` kills this script's process group, which the stage is not in).
stage_session() {  # SIDFILE COMMAND...
  echo $$ > "$1"; shift
  ( while kill -0 "$SESSION_PID" 2>/dev/null; do sleep 1; done; kill_session $$ ) &
  "$@"
}

# stage NAME CAP_SECONDS MIN_SECONDS COMMAND...: runs COMMAND under min(CAP, time left), or skips
# it when less than MIN is left (STAGE_CAP_<name> / STAGE_MIN_<name> override, for the tests)
stage() {
  local name=$1 cap=$2 min=$3; shift 3
  local cap_var="STAGE_CAP_$name" min_var="STAGE_MIN_$name"
  cap=${!cap_var:-$cap} min=${!min_var:-$min}
  case ",$stages," in *",$name,"*) ;; *) return 0 ;; esac
  local limit; limit=$(left)
  [ "$limit" -gt "$cap" ] && limit=$cap
  if [ "$limit" -lt "$min" ]; then
    log "$name: skipped, ${limit}s left of the budget (needs $min)"
    printf '%s\tskipped (no time)\t0\t%s\n' "$name" "$limit" >> "$OUT/stages.tsv"
    return 0
  fi
  log "$name (at most ${limit}s): $*"
  local t0_us rc=0 sidfile="$OUT/.stage-$name.sid"
  t0_us=$(now_us)
  # a session of its own (functions exported below); timeout signals its whole process group, and
  # what is left of the session when it returns (asv's forkserver) ends before the next stage
  setsid -w bash -c 'stage_session "$@"' "$name" "$sidfile" \
    timeout --kill-after=5 "$limit" bash -c '"$@"' "$name" "$@" || rc=$?
  kill_session "$(cat "$sidfile" 2>/dev/null)"
  rm -f "$sidfile"
  local status="ok"
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && status="cut at ${limit}s"
  [ "$rc" -ne 0 ] && [ "$status" = ok ] && status="exit $rc"
  local took; took=$(seconds_since "$t0_us")
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$took" "$limit" >> "$OUT/stages.tsv"
  log "$name: $status after ${took}s"
  return "$rc"
}

source tools/gpu_runner/restore_git.sh || exit 4  # .git and git itself from .carry/, where the device lacks them
if [ -d .whl ]; then
  log "installing asv and pytest from .whl/"
  python3 -m pip install -q --no-index --find-links .whl asv pytest 2>&1 | tail -3
  # Optional, each on its own: NVML for the runner state, Liger for its peers (torch and triton are
  # the runner's). A missing wheel means "not recorded" / a skip with its reason, not a stop.
  for optional in nvidia-ml-py liger-kernel; do
    python3 -m pip install -q --no-index --find-links .whl --no-deps "$optional" >/dev/null 2>&1 \
      || log "  $optional not installed (not in .whl/)"
  done
fi
# Once per session: the Python has asv, torch and triton, and the machine is registered with asv
# (each class's benchmarks.run --prepared trusts this instead of importing torch twice more)
python3 -m benchmarks.run --prepare-only --machine "$machine" 2>&1 | tee -a "$OUT/session.log"
prepared=${PIPESTATUS[0]}
# setup (git, wheels, the check and the registration) is a row of the table too: the cost model has it
printf 'setup\t%s\t%s\t-\n' "$([ "$prepared" -eq 0 ] && echo ok || echo "exit $prepared")" "$(seconds_since "$start_us")" \
  >> "$OUT/stages.tsv"
[ "$prepared" -eq 0 ] || { log "the Python cannot run the suite, or the machine could not be registered"; exit 4; }

# The asv grid, one class per asv run (the training modes together): each run writes its result
# file when it ends, and asv merges runs of one commit into one file. Each extra run costs ~11 s
# (discovery and the forkserver import torch), beside benchmarks.run's one run per grid.
asv_by_class() {  # GRID "CLASS REGEXES" [--commits C]
  local g=$1 classes=$2 rc=0 b; shift 2
  local -; set -f  # the regexes split at spaces, never expanded as globs ([^,] and (?! are regex)
  for b in $classes; do
    # --prepared: the Python was checked and the machine registered once, for the session (above)
    python3 -m benchmarks.run --prepared --machine "$machine" --grid "$g" --bench "$b" "$@" >>"$OUT/asv.log" 2>&1 || rc=$?
    log "  $g $b: exit $rc"
    copy_results
  done
  return "$rc"
}
# The results so far into $OUT as each class ends: a kill of the whole call (which runs no exit
# trap) then loses only the class that was running.
copy_results() { mkdir -p "$OUT/results" && cp -a results/. "$OUT/results/"; }

gpu_check() { python3 -m benchmarks.gpu_check --out "$OUT" ${small:+"$small"} > "$OUT/gpu_check.log" 2>&1; }
# Native runs of the kernel tests, most telling first (the GEMM variants forced, then FP8, then the
# backward kernels); no -x: every failure is in the log. -v writes each test's verdict as it
# finishes (junit XML only at the end), so a stage cut short still says what passed.
# NATIVE_TESTS: other test files (for the tests of this script).
native() {
  # shellcheck disable=SC2086  # a list of paths
  python3 -m pytest -v -rfE -p no:cacheprovider ${NATIVE_TESTS:-tests/test_persistent.py \
    tests/test_fp8.py tests/test_fp8_persistent.py tests/test_fp8_errors.py tests/test_fp8_modules.py \
    tests/test_backward.py tests/test_backward_gated.py tests/test_backward_narrow.py} > "$OUT/native_tests.log" 2>&1
}
quick_grid=$([ -n "$small" ] && echo tiny || echo quick)
profile() {
  python3 -m benchmarks.profile --grid "$quick_grid" --machine "$machine" --save results/profiles > "$OUT/profile.log" 2>&1
}
export -f log asv_by_class copy_results gpu_check native profile kill_session stage_session
export OUT machine small start quick_grid SESSION_PID=$$ NATIVE_TESTS

stage quick 280 60 asv_by_class "$quick_grid" "$quick_classes"

stage check 200 45 gpu_check
check_rc=$?
case ",$stages," in
  *",check,"*) grep -q '"complete": true' "$OUT/gpu_check.json" 2>/dev/null || check_rc=3 ;;  # cut short or skipped
  *) check_rc=0 ;;
esac

stage native 120 30 native

if [ "$grid" != "$quick_grid" ] || [ -n "$commits" ]; then
  stage rest 1200 60 asv_by_class "$grid" "$rest_classes" ${commits:+--commits "$commits"}
fi

stage profile 120 45 profile

tail -25 "$OUT/gpu_check.log" 2>/dev/null
log "done; gpu_check exit $check_rc"
exit "$check_rc"
