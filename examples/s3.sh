#!/usr/bin/env bash
# S3 against any endpoint (AWS, Ceph RGW, MinIO, …): a small partitioned job into
# s3a://BUCKET/PREFIX (s3://, s3a:// and s3n:// are one store). Credentials come from the AWS
# SDK's usual chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, an instance role).
#   usage: S3_ENDPOINT=http://127.0.0.1:7480 s3.sh BUCKET [PREFIX]
# Without S3_ENDPOINT: AWS_ENDPOINT_URL if set, else AWS itself. With a custom endpoint,
# addressing is path-style (what Ceph and MinIO need).
set -euo pipefail
sc() { ${STAGECOMMIT:-stagecommit} "$@"; }
bucket=$1
prefix=${2:-stagecommit-example/sales}
work=$(mktemp -d "${TMPDIR:-/tmp}/stagecommit-s3.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "${S3_ENDPOINT:-}" ]; then
  printf 's3:\n  endpoint: %s\n  region: %s\n' "$S3_ENDPOINT" "${AWS_REGION:-us-east-1}" > "$work/config.yaml"
  export STAGECOMMIT_CONFIG="$work/config.yaml"
fi
printf 'id,amount\n1,10\n' > "$work/part-0.csv"
printf 'id,amount\n2,20\n' > "$work/part-1.csv"
job=$(sc stage --target "s3a://$bucket/$prefix" --mode overwrite --partition-by dt --tasks 2 --quiet)
sc stage --job "$job" --task 0 --partition dt=2026-11-29 "$work/part-0.csv" --quiet
sc stage --job "$job" --task 1 --partition dt=2026-11-30 "$work/part-1.csv" --quiet
sc commit-task --job "$job" --task 0 --quiet
sc commit-task --job "$job" --task 1 --quiet
sc commit-job --job "$job" --verbose
