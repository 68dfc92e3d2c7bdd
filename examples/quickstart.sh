#!/usr/bin/env bash
# stagecommit quickstart: a partitioned table written by several tasks in parallel, a
# duplicate attempt denied, one all-or-nothing commit, then a dynamic overwrite of one
# partition. Runs in a temporary directory; needs `npm run build` first.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sc() { node "$here/../bin/stagecommit.js" "$@"; }
work=$(mktemp -d "${TMPDIR:-/tmp}/stagecommit-quickstart.XXXXXX")
trap 'rm -rf "$work"' EXIT
show() { echo "--- $1"; (cd "$work" && find . -path ./input -prune -o -type f -print | sed 's|^\./||' | sort); echo; }

mkdir -p "$work/input"
for d in 2026-11-28 2026-11-29 2026-11-30; do
  for part in 0 1; do printf 'order,%s,%s\n' "$d" "$part" > "$work/input/orders-$d-$part.csv"; done
done

echo "1. stage a job: dynamic partitions by dt, six tasks declared"
job=$(sc stage --target "$work/sales" --partition-by dt --tasks 6 --quiet)
echo "   job handle: $job"

echo "2. six tasks stage their files in parallel (two per partition)"
t=0
for d in 2026-11-28 2026-11-29 2026-11-30; do
  for part in 0 1; do
    sc stage --job "$job" --task $t --partition "dt=$d" "$work/input/orders-$d-$part.csv" --quiet &
    t=$((t + 1))
  done
done
wait
show "the staging dir holds the files; the table does not exist yet"

echo "3. every task commits; a speculative second attempt of task 0 is denied (exit 3)"
for t in 0 1 2 3 4 5; do sc commit-task --job "$job" --task $t --quiet & done
wait
printf 'speculative copy\n' > "$work/input/speculative.csv"
sc stage --job "$job" --task 0 --attempt 1 --partition dt=2026-11-28 "$work/input/speculative.csv" --quiet
set +e
sc commit-task --job "$job" --task 0 --attempt 1
echo "   commit-task attempt 1 exited $?"
set -e
sc status --job "$job"
echo

echo "4. commit-job: the whole table appears at once"
sc commit-job --job "$job" --verbose
show "the table, with _SUCCESS; the staging dir is gone"

echo "5. a dynamic overwrite replaces only the partition it writes (dt=2026-11-29)"
printf 'order,2026-11-29,corrected\n' > "$work/input/corrected.csv"
job2=$(sc stage --target "$work/sales" --mode overwrite --partition-by dt --quiet)
sc stage --job "$job2" --task 0 --partition dt=2026-11-29 "$work/input/corrected.csv" --quiet
sc commit-task --job "$job2" --task 0 --quiet
sc commit-job --job "$job2"
show "dt=2026-11-29 now holds only corrected.csv; the other partitions are untouched"
echo "quickstart done"
