#!/usr/bin/env bash
# A scheduler's view of a stagecommit step: runs it and turns its exit code into what a
# scheduler does next.
#   0  ok
#   3  skip:  another attempt of this task won its commit (a speculative or retried copy);
#             this attempt's output is dropped by design, not an error. Exits ${SKIP_EXIT:-99}
#             (Airflow's BashOperator marks exit 99 as skipped).
#   4  retry: a conflict that passes (the job is locked by another driver, another job is
#             committing the same partitions); retried ${RETRIES:-5} times, backing off.
#   5  fail:  declared tasks are missing; `stagecommit recover --job JOB` lists them.
#   1, 2 fail (a store error or damaged manifest; bad usage or input): a person looks.
#   usage: scheduler-wrapper.sh stagecommit commit-job --job "$JOB"
set -uo pipefail
retries=${RETRIES:-5}
delay=${DELAY:-2}
for ((try = 1; ; try++)); do
  "$@"
  code=$?
  case $code in
    0) exit 0 ;;
    3) echo "scheduler: skip: another attempt of this task won its commit" >&2; exit "${SKIP_EXIT:-99}" ;;
    4)
      if ((try < retries)); then
        echo "scheduler: retry ${try}/${retries} in ${delay}s (conflict: exit 4)" >&2
        sleep "$delay"
        delay=$((delay * 2))
        continue
      fi
      echo "scheduler: fail: still in conflict after ${retries} tries" >&2
      exit 4 ;;
    5) echo "scheduler: fail: declared tasks are missing (stagecommit recover lists them)" >&2; exit 5 ;;
    *) echo "scheduler: fail: exit ${code}" >&2; exit "$code" ;;
  esac
done
