#!/usr/bin/env bash
# HDFS through the cluster's own client config: HADOOP_CONF_DIR's core-site.xml (fs.defaultFS)
# and hdfs-site.xml (dfs.nameservices, dfs.ha.namenodes.<ns>,
# dfs.namenode.http-address.<ns>.<nn>) tell stagecommit where WebHDFS answers; a standby or
# unreachable name node fails over to the next one.
#   usage: HADOOP_CONF_DIR=/etc/hadoop/conf hdfs-nameservice.sh [TARGET]
#   TARGET: hdfs://NAMESERVICE/path, or hdfs:///path for fs.defaultFS (default hdfs:///tmp/stagecommit-example/sales)
set -euo pipefail
sc() { ${STAGECOMMIT:-stagecommit} "$@"; }
export HADOOP_CONF_DIR="${HADOOP_CONF_DIR:-/etc/hadoop/conf}"
export HADOOP_USER_NAME="${HADOOP_USER_NAME:-$USER}"
target=${1:-hdfs:///tmp/stagecommit-example/sales}
work=$(mktemp -d "${TMPDIR:-/tmp}/stagecommit-hdfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
printf 'a,1\n' > "$work/part-0.csv"
job=$(sc stage --target "$target" --mode append --tasks 1 --quiet)
sc stage --job "$job" --task 0 "$work/part-0.csv" --quiet
sc commit-task --job "$job" --task 0 --quiet
sc commit-job --job "$job"
