#!/usr/bin/env bash
# A scheduler's view of a stagecommit step: runs it and turns its exit code into what a
# scheduler does next. Only what can pass is retried.
#   0  ok
#   3  skip:  another attempt of this task won its commit (a speculative or retried copy);
#             this attempt's output is dropped by design, not an error. Exits ${SKIP_EXIT:-99}
#             (Airflow's BashOperator marks exit 99 as skipped).
#   4  retry: passes on its own (the job is locked by a live step, another job is still
#             committing the same partitions); retried ${RETRIES:-5} times, backing off.
#   130, 143  retry: the step was stopped by a signal; every step is safe to run again.
#   5  fail:  declared tasks are missing; `stagecommit status --job JOB --tasks-to-run` lists them.
#   6  fail at once: will never pass as it is (an append clash, a create target that appeared,
#             two tasks writing one path, a partition replaced by another job): a retry would
#             only burn time; the message says what to do.
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
    4 | 130 | 143)
      if ((try < retries)); then
        echo "scheduler: retry ${try}/${retries} in ${delay}s (exit ${code}: passes once the other step is done)" >&2
        sleep "$delay"
        delay=$((delay * 2))
        continue
      fi
      echo "scheduler: fail: still exit ${code} after ${retries} tries" >&2
      exit "$code" ;;
    5) echo "scheduler: fail: declared tasks are missing (stagecommit status --tasks-to-run lists them)" >&2; exit 5 ;;
    6) echo "scheduler: fail: will never pass as it is (exit 6), not retried: see the message above" >&2; exit 6 ;;
    *) echo "scheduler: fail: exit ${code}" >&2; exit "$code" ;;
  esac
done
