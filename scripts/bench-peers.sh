#!/usr/bin/env bash
# Installs the peer tools the S3 benchmark compares against (Debian's awscli and rclone).
# Usage: scripts/bench-peers.sh   (as root; does nothing when both are present)
set -euo pipefail
if [ -x /usr/bin/aws ] && command -v rclone >/dev/null; then exit 0; fi
echo "bench-peers: installing awscli and rclone from Debian" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends awscli rclone >/dev/null
