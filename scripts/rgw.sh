#!/usr/bin/env bash
# A private Ceph RADOS Gateway (S3) for the tests and benchmarks: one monitor, one in-memory
# OSD and radosgw on 127.0.0.1, no auth, no systemd. Usage: rgw.sh install|start|stop|status|settle|env
# State lives in $RGW_DIR (default /tmp/stagecommit-rgw). Facts: shared notes/test-servers.md.
set -euo pipefail

RGW_DIR=${RGW_DIR:-/tmp/stagecommit-rgw}
RGW_PORT=${RGW_PORT:-7480}
MON_PORT=${RGW_MON_PORT:-3300}
ACCESS_KEY=${RGW_ACCESS_KEY:-stagecommit}
SECRET_KEY=${RGW_SECRET_KEY:-stagecommit-secret}
CONF="$RGW_DIR/ceph.conf"

log() { echo "rgw: $*" >&2; }

install() {
  if command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null; then return 0; fi
  log "installing Ceph (ceph-mon ceph-osd radosgw) from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends ceph-mon ceph-osd radosgw ceph-common ceph-base curl >/dev/null
}

running() {
  curl -s -o /dev/null "http://127.0.0.1:$RGW_PORT/" 2>/dev/null || return 1
}

write_conf() {
  mkdir -p "$RGW_DIR"/{run,log,mon/ceph-a,osd/ceph-0}
  cat > "$CONF" <<CONF
[global]
fsid = $(cat "$RGW_DIR/fsid")
mon host = v2:127.0.0.1:$MON_PORT
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms bind msgr1 = false
ms mon client mode = crc
ms client mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
osd crush chooseleaf type = 0
run dir = $RGW_DIR/run
log file = $RGW_DIR/log/\$name.log
admin socket = $RGW_DIR/run/\$name.asok
pid file = $RGW_DIR/run/\$name.pid
mon data = $RGW_DIR/mon/\$cluster-\$id
osd data = $RGW_DIR/osd/\$cluster-\$id
keyring = $RGW_DIR/keyring
[osd]
osd objectstore = memstore
# Memory-backed: 4 GiB holds a whole benchmark run (RGW frees deleted data only through its GC).
memstore device bytes = 4294967296
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT tcp_nodelay=1
# One bucket index shard: a listing then reads one omap instead of merging eleven.
rgw override bucket index max shards = 1
rgw bucket index max aio = 16
# Deleted objects' data goes to RGW's garbage collector, which by default waits two hours and
# runs hourly: the memory-backed store fills up in one benchmark run. Collect at once, often.
rgw gc obj min wait = 0
rgw gc processor period = 15
rgw gc processor max time = 15
rgw data = $RGW_DIR/rgw
CONF
}

wait_for() {
  local what=$1 tries=$2; shift 2
  for _ in $(seq "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for $what (logs in $RGW_DIR/log)"
  return 1
}

start() {
  if running; then log "already running on :$RGW_PORT"; return 0; fi
  command -v radosgw >/dev/null || { log "radosgw is not installed: run '$0 install' (apt-get, as root)"; return 1; }
  stop >/dev/null 2>&1 || true
  rm -rf "$RGW_DIR"; mkdir -p "$RGW_DIR"
  cat /proc/sys/kernel/random/uuid > "$RGW_DIR/fsid"
  write_conf
  local c=(--conf "$CONF")
  monmaptool --create --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$(cat "$RGW_DIR/fsid")" "$RGW_DIR/monmap" >/dev/null
  ceph-mon "${c[@]}" --mkfs -i a --monmap "$RGW_DIR/monmap" >/dev/null
  setsid ceph-mon "${c[@]}" -i a >/dev/null 2>&1 < /dev/null
  wait_for "the monitor" 60 ceph "${c[@]}" --connect-timeout 2 mon stat
  local uuid id
  uuid=$(cat /proc/sys/kernel/random/uuid)
  id=$(ceph "${c[@]}" osd new "$uuid")
  mkdir -p "$RGW_DIR/osd/ceph-$id"
  ceph-osd "${c[@]}" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1
  setsid ceph-osd "${c[@]}" -i "$id" >/dev/null 2>&1 < /dev/null
  wait_for "the OSD" 120 bash -c "ceph --conf '$CONF' osd stat | grep -q '1 up'"
  setsid radosgw "${c[@]}" -n client.rgw.a >/dev/null 2>&1 < /dev/null
  wait_for "radosgw on :$RGW_PORT" 120 running
  wait_for "the S3 user" 40 radosgw-admin "${c[@]}" user create --uid=stagecommit --display-name=stagecommit --access-key="$ACCESS_KEY" --secret="$SECRET_KEY"
  log "S3 endpoint http://127.0.0.1:$RGW_PORT (access key $ACCESS_KEY)"
}

stop() {
  for f in "$RGW_DIR"/run/*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
  done
  pkill -f -- "--conf $CONF" 2>/dev/null || true
  for _ in $(seq 40); do pgrep -f -- "--conf $CONF" >/dev/null || break; sleep 0.25; done
  pkill -9 -f -- "--conf $CONF" 2>/dev/null || true
}

# Runs the garbage collector's pending work now (what deleted objects left), so a benchmark's next
# command does not share the server with the collection of the previous one's deletes.
settle() {
  radosgw-admin --conf "$CONF" gc process --include-all >/dev/null 2>&1
}

case "${1:-}" in
  install) install ;;
  settle) settle ;;
  start) start ;;
  stop) stop ;;
  status) running ;;
  env) printf 'AWS_ENDPOINT_URL=http://127.0.0.1:%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_REGION=us-east-1\n' "$RGW_PORT" "$ACCESS_KEY" "$SECRET_KEY" ;;
  *) echo "usage: $0 install|start|stop|status|settle|env" >&2; exit 2 ;;
esac
