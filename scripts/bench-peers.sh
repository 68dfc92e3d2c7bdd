#!/usr/bin/env bash
# Installs the peer tools the benchmarks compare against, from Debian: the ones named, or all of
# them (awscli, rclone, rsync). Does nothing for tools already present; installing needs root.
# Usage: scripts/bench-peers.sh [awscli] [rclone] [rsync]
set -euo pipefail
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(awscli rclone rsync)
missing=()
for p in "${want[@]}"; do
  case "$p" in
    awscli) [ -x /usr/bin/aws ] || missing+=(awscli) ;;
    rclone) command -v rclone >/dev/null || missing+=(rclone) ;;
    rsync) command -v rsync >/dev/null || missing+=(rsync) ;;
    *) echo "bench-peers: unknown tool '$p' (awscli, rclone, rsync)" >&2; exit 2 ;;
  esac
done
[ ${#missing[@]} -gt 0 ] || exit 0
echo "bench-peers: installing ${missing[*]} from Debian" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
