#!/usr/bin/env bash
# A daily pipeline that is safe to run again from the top, as a scheduler's retry does after a
# kill: the job's id is the day's, so a rerun finds the job the failed run staged, runs only the
# tasks `status --tasks-to-run` lists (the committed ones are kept), and commits. A rerun after
# the commit says "already committed" and changes nothing. The table ends with one job's data.
#   usage: rerun-pipeline.sh TARGET DT      (STAGECOMMIT: the command, default stagecommit;
#          TASKS: how many tasks, default 4; TASK_SECONDS: each task's work time, default 0)
set -euo pipefail
STAGECOMMIT="${STAGECOMMIT:-stagecommit}"
target=$1
dt=$2
tasks=${TASKS:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
JOB=$($STAGECOMMIT stage --target "$target" --mode overwrite --partition-by dt --tasks "$tasks" --job-id "daily-$dt")
echo "pipeline: job $JOB" >&2
for t in $($STAGECOMMIT status --job "$JOB" --tasks-to-run); do
  # The task's work: here, rows written to a local file, as an ETL step would.
  sleep "${TASK_SECONDS:-0}"
  printf 'dt=%s,task=%s\n' "$dt" "$t" >"$work/part-$t.csv"
  $STAGECOMMIT stage --job "$JOB" --task "$t" --partition "dt=$dt" "$work/part-$t.csv"
  $STAGECOMMIT commit-task --job "$JOB" --task "$t"
done
$STAGECOMMIT commit-job --job "$JOB"
