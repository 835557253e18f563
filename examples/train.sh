#!/usr/bin/env bash
# A pretend training job that behaves like a real checkpointed one under frugal-worker:
# it resumes from the checkpoint Frugal hands it, writes a checkpoint every few steps
# (data first, synced, then renamed into place, then reported with `frugal checkpoint`),
# and on SIGTERM (preemption, cancel, worker shutdown) saves a final checkpoint and exits.
#
# Usage: train.sh [--steps N] [--checkpoint-every N] [--step-seconds S]
# or the environment: TRAIN_STEPS (20), CHECKPOINT_EVERY (5), STEP_SECONDS (0.2).
# FAIL_ALWAYS=1 makes it exit 3 at once (a job that always fails, for tests).
# Uses FRUGAL_CHECKPOINT_DIR, FRUGAL_RESUME_FROM, FRUGAL_RESUME_STEP and FRUGAL_CLI (the
# frugal binary; default: `frugal` on PATH). Outside Frugal it checkpoints to ./checkpoints
# and reports nothing.
set -euo pipefail

steps=${TRAIN_STEPS:-20}
every=${CHECKPOINT_EVERY:-5}
step_seconds=${STEP_SECONDS:-0.2}

die() { echo "train.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=${2:?}; shift 2 ;;
    --checkpoint-every) every=${2:?}; shift 2 ;;
    --step-seconds) step_seconds=${2:?}; shift 2 ;;
    *) die "unknown argument '$1' (--steps N, --checkpoint-every N, --step-seconds S)" ;;
  esac
done
[[ $steps =~ ^[0-9]+$ && $steps -gt 0 ]] || die "steps must be a positive integer, got '$steps'"
[[ $every =~ ^[0-9]+$ && $every -gt 0 ]] || die "checkpoint-every must be a positive integer"
[[ $step_seconds =~ ^[0-9]*\.?[0-9]+$ ]] || die "step-seconds must be a number of seconds"

if [[ ${FAIL_ALWAYS:-0} == 1 ]]; then
  echo "FAIL_ALWAYS=1: failing on purpose"
  exit 3
fi

checkpoint_dir=${FRUGAL_CHECKPOINT_DIR:-$PWD/checkpoints}
mkdir -p "$checkpoint_dir"

# The step a checkpoint holds, read from the data itself (the URI may outlive env vars).
resume_step() {
  local uri=${FRUGAL_RESUME_FROM:-} step=""
  if [[ $uri == file://* && -r ${uri#file://} ]]; then
    step=$(sed -n 's/^step=\([0-9][0-9]*\)$/\1/p' "${uri#file://}" | head -n 1)
  fi
  if [[ -z $step && -n $uri ]]; then
    echo "cannot read a step from $uri; using FRUGAL_RESUME_STEP" >&2
  fi
  [[ -z $step ]] && step=${FRUGAL_RESUME_STEP:-}
  [[ $step =~ ^[0-9]+$ ]] || step=0
  echo "$step"
}

start=$(resume_step)
(( start > steps )) && start=$steps
step=$start
last_checkpoint=$start  # a resumed step is already committed

# Data first: write a temporary, sync it, rename it into place, sync the directory. Only
# then report it, so the scheduler never commits a checkpoint that is not on disk.
checkpoint() {
  local n=$1 path="$checkpoint_dir/step-$1" progress
  local tmp="$path.tmp.$$"
  progress=$(awk -v s="$n" -v t="$steps" 'BEGIN { printf "%.4f", s / t }')
  printf 'step=%d\nprogress=%s\nweights=%s\n' "$n" "$progress" "$RANDOM$RANDOM" >"$tmp"
  sync "$tmp"
  mv -f "$tmp" "$path"
  sync "$checkpoint_dir"
  if [[ -n ${FRUGAL_CHECKPOINT_SPOOL:-} ]]; then
    if ! "${FRUGAL_CLI:-frugal}" checkpoint --step "$n" --progress "$progress" \
        --uri "file://$path" >/dev/null; then
      echo "warning: could not report checkpoint step $n" >&2
      return 0
    fi
  fi
  last_checkpoint=$n
  echo "checkpoint step $n -> $path"
}

on_term() {
  echo "SIGTERM at step $step/$steps"
  if (( step > last_checkpoint )); then checkpoint "$step"; fi
  exit 143
}
trap on_term TERM

suffix=""
if (( start > 0 )); then suffix=" (resumed from $start)"; fi
echo "training $steps steps, checkpoint every $every, ${step_seconds}s per step" \
  "(job ${FRUGAL_JOB_ID:-?} attempt ${FRUGAL_ATTEMPT:-?})${suffix}"

while (( step < steps )); do
  sleep "$step_seconds" || true  # SIGTERM ends the sleep too; the trap takes over
  step=$((step + 1))
  echo "step $step/$steps$suffix"
  if (( step % every == 0 )); then checkpoint "$step"; fi
done
echo "done: $steps steps"
exit 0
