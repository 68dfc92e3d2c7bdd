#!/usr/bin/env bash
# Parallel tasks with xargs -P: one task per input file, ${PARALLEL:-4} at a time, then one
# all-or-nothing commit. A task that fails aborts the whole job; the table is left as it was.
#   usage: parallel-xargs.sh TARGET FILE...      (STAGECOMMIT: the command, default stagecommit)
set -euo pipefail
export STAGECOMMIT="${STAGECOMMIT:-stagecommit}"
target=$1
shift
# The job handle goes to every task through the environment (STAGECOMMIT_JOB is --job's default).
STAGECOMMIT_JOB=$($STAGECOMMIT stage --target "$target" --mode overwrite --tasks "$#" --quiet)
export STAGECOMMIT_JOB
# Task i stages the i-th file and commits it.
i=0
for f in "$@"; do printf '%s\0%s\0' "$i" "$f"; i=$((i + 1)); done |
  if ! xargs -0 -n 2 -P "${PARALLEL:-4}" sh -c '$STAGECOMMIT stage --task "$0" "$1" --quiet && $STAGECOMMIT commit-task --task "$0" --quiet'; then
    echo "a task failed: aborting job $STAGECOMMIT_JOB (the target is untouched)" >&2
    $STAGECOMMIT abort --quiet
    exit 1
  fi
$STAGECOMMIT commit-job
