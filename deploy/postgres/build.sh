#!/usr/bin/env bash
# Builds a PostgreSQL image offline from Debian's packages (bookworm's postgresql 15), with the functions the other
# images use (packages/sandbox/scripts/rootfs.sh), for trying and testing deploy/compose.yaml where no image may be
# pulled; it reads the official image's variables (entrypoint.sh). Cached by content stamp like the others.
#
# Usage: build.sh [IMAGE]     (default: localhost/codex-agent-api-postgres:15)
# Environment: AGENT_IMAGE_MIRROR, AGENT_IMAGE_CACHE (as for deploy/image/build.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
ROOTFS_NAME=codex-agent-api-postgres
ROOTFS_MIRROR="${AGENT_IMAGE_MIRROR:-}"
ROOTFS_CACHE="${AGENT_IMAGE_CACHE:-/var/cache/codex-agent-api-image}"
# shellcheck source=../../packages/sandbox/scripts/rootfs.sh
. "$repo/packages/sandbox/scripts/rootfs.sh"

image="${1:-localhost/codex-agent-api-postgres:15}"
suite=bookworm
arch="$(dpkg --print-architecture)"
label="io.codex-agent-api.postgres.stamp"

rootfs_require
rootfs_lock
stamp="$( {
  cat "$0" "$here/entrypoint.sh" "$repo/packages/sandbox/scripts/rootfs.sh"
  printf '%s\n' "$suite" "$arch"
} | sha256sum | cut -c1-32)"
if rootfs_up_to_date "$image" "$label" "$stamp"; then exit 0; fi

mirror="$(rootfs_mirror "$suite")"
rootfs_start
rootfs_debootstrap "$suite" "$mirror" "ca-certificates"
# (the package's own cluster is not used: the entry point makes one in PGDATA, on the volume)
rootfs_apt_install "$mirror" "$suite" postgresql-15
root="$ROOTFS_ROOT"
rm -rf "$root/var/lib/postgresql/15" "$root/etc/postgresql/15"
install -d -m 0700 -o "$(chroot "$root" id -u postgres)" -g "$(chroot "$root" id -g postgres)" \
  "$root/var/lib/postgresql/data"
install -d -m 2775 -o "$(chroot "$root" id -u postgres)" -g "$(chroot "$root" id -g postgres)" "$root/run/postgresql"
install -m 0755 "$here/entrypoint.sh" "$root/usr/local/bin/entrypoint.sh"
rootfs_shrink
rootfs_import "$image" "$label" "$stamp" "USER postgres" "ENV PGDATA=/var/lib/postgresql/data" \
  "VOLUME /var/lib/postgresql/data" "EXPOSE 5432" "STOPSIGNAL SIGINT" \
  'ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]'
rootfs_drop_previous
rootfs_log "built $image (stamp $stamp) in $(($(date +%s) - ROOTFS_STARTED)) s"
echo "$image"
