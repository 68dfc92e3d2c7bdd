#!/usr/bin/env bash
# A private MIT Kerberos KDC for the tests: realm STAGECOMMIT.TEST on 127.0.0.1, its database,
# keytabs and ticket cache in $KDC_DIR (default /tmp/stagecommit-kdc). Principals: tester (password
# tester-pw, also in tester.keytab) and HTTP/localhost (http.keytab, what a WebHDFS server accepts
# tickets with). Usage: kdc.sh install|start|stop|status|env
set -euo pipefail

KDC_DIR=${KDC_DIR:-/tmp/stagecommit-kdc}
KDC_PORT=${KDC_PORT:-17088}
REALM=${KDC_REALM:-STAGECOMMIT.TEST}

log() { echo "kdc: $*" >&2; }

install() {
  if command -v krb5kdc >/dev/null && command -v kdb5_util >/dev/null && command -v kinit >/dev/null &&
    [ -e /usr/include/gssapi/gssapi.h ]; then return 0; fi
  log "installing MIT Kerberos (krb5-kdc krb5-admin-server krb5-user libkrb5-dev) from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends krb5-kdc krb5-admin-server krb5-user libkrb5-dev >/dev/null
}

export KRB5_CONFIG="$KDC_DIR/krb5.conf" KRB5_KDC_PROFILE="$KDC_DIR/kdc.conf"

running() {
  [ -f "$KDC_DIR/kdc.pid" ] && kill -0 "$(cat "$KDC_DIR/kdc.pid")" 2>/dev/null
}

write_conf() {
  mkdir -p "$KDC_DIR"
  cat > "$KRB5_CONFIG" <<CONF
[libdefaults]
  default_realm = $REALM
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
  ticket_lifetime = 10h
[realms]
  $REALM = {
    kdc = 127.0.0.1:$KDC_PORT
  }
[domain_realm]
  localhost = $REALM
CONF
  cat > "$KRB5_KDC_PROFILE" <<CONF
[kdcdefaults]
  kdc_listen = 127.0.0.1:$KDC_PORT
  kdc_tcp_listen = 127.0.0.1:$KDC_PORT
[realms]
  $REALM = {
    database_name = $KDC_DIR/principal
    key_stash_file = $KDC_DIR/stash
    acl_file = $KDC_DIR/kadm5.acl
    max_life = 10h
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }
[logging]
  kdc = FILE:$KDC_DIR/kdc.log
CONF
  : > "$KDC_DIR/kadm5.acl"
}

start() {
  if running; then log "already running on 127.0.0.1:$KDC_PORT"; return 0; fi
  rm -rf "$KDC_DIR"
  write_conf
  kdb5_util create -s -r "$REALM" -P stagecommit-master >/dev/null 2>&1
  kadmin.local -q "addprinc -pw tester-pw tester" >/dev/null 2>&1
  kadmin.local -q "addprinc -randkey HTTP/localhost" >/dev/null 2>&1
  kadmin.local -q "ktadd -k $KDC_DIR/http.keytab HTTP/localhost" >/dev/null 2>&1
  kadmin.local -q "ktadd -norandkey -k $KDC_DIR/tester.keytab tester" >/dev/null 2>&1
  krb5kdc -P "$KDC_DIR/kdc.pid"
  for _ in $(seq 1 50); do
    if KRB5CCNAME="FILE:$KDC_DIR/tester.ccache" kinit -k -t "$KDC_DIR/tester.keytab" tester 2>/dev/null; then
      log "running on 127.0.0.1:$KDC_PORT (realm $REALM)"
      return 0
    fi
    sleep 0.2
  done
  log "did not start: see $KDC_DIR/kdc.log"
  return 1
}

stop() {
  if running; then kill "$(cat "$KDC_DIR/kdc.pid")"; fi
  rm -rf "$KDC_DIR"
}

env_out() {
  # A fresh ticket for tester: the cache the tests' CLI processes use by default.
  KRB5CCNAME="FILE:$KDC_DIR/tester.ccache" kinit -k -t "$KDC_DIR/tester.keytab" tester
  echo "KRB5_CONFIG=$KRB5_CONFIG"
  echo "KRB5CCNAME=FILE:$KDC_DIR/tester.ccache"
  echo "KRB5_KTNAME=FILE:$KDC_DIR/http.keytab"
  echo "STAGECOMMIT_TEST_KDC_DIR=$KDC_DIR"
  echo "STAGECOMMIT_TEST_KDC_REALM=$REALM"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) running ;;
  env) env_out ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
