#!/usr/bin/env bash
# A Spark `INSERT OVERWRITE TABLE sales PARTITION (dt) …` with dynamic partition overwrite,
# killed an hour ago inside its job commit: dt=2026-11-28 was already replaced, dt=2026-11-29
# deleted from the table and not yet replaced, dt=2026-11-30 still in `.spark-staging-<id>`.
# Deleting the staging dir would lose dt=2026-11-29 for good; this finishes the job instead.
# Runs in a temporary directory (or the one given as $1); needs `npm run build` first.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sc() { node "$here/../bin/stagecommit.js" "$@"; }
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/stagecommit-adopt.XXXXXX")}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
t="$work/sales"
spark_job=5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42
staging="$t/.spark-staging-$spark_job"
file() { mkdir -p "$(dirname "$1")"; printf '%s' "$2" > "$1"; printf 'crc' > "$(dirname "$1")/.$(basename "$1").crc"; }

echo "1. the table as the killed Spark job left it"
file "$t/dt=2026-11-27/part-00000-old.c000.snappy.parquet" 'untouched 27'
file "$t/dt=2026-11-28/part-00000-$spark_job.c000.snappy.parquet" 'new 28 (already moved in)'
file "$staging/dt=2026-11-29/part-00000-$spark_job.c000.snappy.parquet" 'new 29, task 0'
file "$staging/dt=2026-11-29/part-00001-$spark_job.c000.snappy.parquet" 'new 29, task 1'
file "$staging/dt=2026-11-30/part-00001-$spark_job.c000.snappy.parquet" 'new 30'
touch "$staging/_SUCCESS"
find "$work" -exec touch -d '1 hour ago' {} +
(cd "$work" && find sales -type f | sort | sed 's/^/   /')

echo "2. adopt the leftover: it becomes a stagecommit job (one rename, no data copied)"
job=$(sc adopt "$staging")
echo "   job handle: $job"

echo "3. what commit-job would do (changes nothing)"
sc commit-job --job "$job" --dry-run | sed 's/^/   /'

echo "4. commit: dt=2026-11-29 and dt=2026-11-30 are published as overwrites of those partitions"
sc commit-job --job "$job" --quiet >/dev/null
(cd "$work" && find sales -type f | sort | sed 's/^/   /')
