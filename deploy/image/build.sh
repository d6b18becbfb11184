#!/usr/bin/env bash
# Builds the service's container image offline from Debian's packages, with the functions the sandbox image uses
# (packages/sandbox/scripts/rootfs.sh): debootstrap (trixie, minbase: its nodejs is 20.19) from the machine's
# configured Debian mirror, the packages of packages.txt, an unprivileged user `codex-agent-api` (uid 1000), the
# service installed from its npm tarballs into /opt/codex-agent-api, then `podman import` and the configuration of
# ./Containerfile (user, /data volume, port, health check, entry point) with `podman build --pull=never`. Nothing
# is pulled from a registry. Cached: when an image of that name already carries the same content stamp (these
# scripts, the package list, the tarballs, suite and architecture), it does nothing.
#
# Usage: build.sh [TARBALL_DIR] [IMAGE]
#   TARBALL_DIR  the service's npm tarballs (scripts/pack.sh OUTDIR); default: packed from this checkout now
#   IMAGE        default: $AGENT_IMAGE or localhost/codex-agent-api:<version>
# Environment: AGENT_IMAGE_MIRROR (a Debian mirror URL; default: read from /etc/apt/sources.list[.d]),
#              AGENT_IMAGE_SUITE (default trixie), AGENT_IMAGE_CACHE (kept .deb files; default
#              /var/cache/codex-agent-api-image), AGENT_IMAGE_FORCE=1 (build even when up to date).
# Needs root, podman, debootstrap and npm (the tarballs are installed with this machine's npm, from its registry).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
ROOTFS_NAME=codex-agent-api-image
ROOTFS_MIRROR="${AGENT_IMAGE_MIRROR:-}"
ROOTFS_CACHE="${AGENT_IMAGE_CACHE:-/var/cache/codex-agent-api-image}"
# shellcheck source=../../packages/sandbox/scripts/rootfs.sh
. "$repo/packages/sandbox/scripts/rootfs.sh"

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$repo/packages/server/package.json" | head -n 1)"
tarballs="${1:-}"
image="${2:-${AGENT_IMAGE:-localhost/codex-agent-api:${version}}}"
suite="${AGENT_IMAGE_SUITE:-trixie}"
arch="$(dpkg --print-architecture)"
list="$here/packages.txt"
label="io.codex-agent-api.image.stamp"

rootfs_require
command -v npm >/dev/null || rootfs_fail "npm is not installed"

if [ -z "$tarballs" ]; then
  tarballs="$(mktemp -d /var/tmp/codex-agent-api-pack.XXXXXX)"
  rootfs_log "packing this checkout into $tarballs"
  bash "$repo/scripts/pack.sh" "$tarballs" >/dev/null
fi
shopt -s nullglob
tgz=("$tarballs"/*.tgz)
shopt -u nullglob
[ "${#tgz[@]}" -gt 0 ] || rootfs_fail "no .tgz in $tarballs (scripts/pack.sh OUTDIR makes them)"

rootfs_lock

packages="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$' | LC_ALL=C sort -u | paste -sd, -)"
[ -n "$packages" ] || rootfs_fail "no packages in $list"
stamp="$( {
  cat "$0" "$repo/packages/sandbox/scripts/rootfs.sh" "$here/Containerfile"
  printf '%s\n' "$packages" "$suite" "$arch"
  for t in "${tgz[@]}"; do sha256sum <"$t"; done
} | sha256sum | cut -c1-32)"

if [ "${AGENT_IMAGE_FORCE:-0}" != 1 ] && rootfs_up_to_date "$image" "$label" "$stamp"; then exit 0; fi

mirror="$(rootfs_mirror "$suite")"
rootfs_start
rootfs_debootstrap "$suite" "$mirror" "$packages"
root="$ROOTFS_ROOT"
# nodejs with apt after debootstrap, as the sandbox image does npm (apt orders the many libraries it needs).
rootfs_apt_install "$mirror" "$suite" nodejs
node_version="$(chroot "$root" node --version)"
rootfs_log "node $node_version in the image"

# The user the service runs as (and with it the engine and the agents' commands, in the engine's sandbox).
chroot "$root" /usr/sbin/groupadd --gid 1000 codex-agent-api
chroot "$root" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home --shell /usr/sbin/nologin codex-agent-api
install -d -m 0700 -o 1000 -g 1000 "$root/data"

# The service from its tarballs, as `npm install` in an empty project would (the native SQLite binding built here:
# the image's Node 20 has the host's module ABI; its glibc is newer than the host's).
app="$root/opt/codex-agent-api"
install -d "$app"
printf '{"name":"codex-agent-api-image","private":true,"allowScripts":{"better-sqlite3":true}}\n' >"$app/package.json"
rootfs_log "npm install of ${#tgz[@]} tarballs"
if ! (cd "$app" && npm install --omit=dev --no-audit --no-fund --no-update-notifier "${tgz[@]}") \
  >"$ROOTFS_WORK/npm.log" 2>&1; then
  tail -n 30 "$ROOTFS_WORK/npm.log" >&2
  rootfs_fail "npm install failed (log above)"
fi
rm -rf "$app/node_modules/.cache"
cat >"$root/usr/local/bin/codex-agent-api" <<'EOF'
#!/bin/sh
exec node /opt/codex-agent-api/node_modules/codex-agent-api/dist/cli.js "$@"
EOF
chmod 0755 "$root/usr/local/bin/codex-agent-api"
chroot "$root" /usr/local/bin/codex-agent-api --help >/dev/null || rootfs_fail "the installed service does not start"

rootfs_shrink
base="localhost/codex-agent-api-base:$stamp"
rootfs_import "$base" "$label" "$stamp"
rootfs_log "configuring $image (Containerfile)"
podman build --quiet --pull=never --format docker --build-arg "BASE=$base" --label "$label=$stamp" \
  --label "org.opencontainers.image.version=$version" -t "$image" -f "$here/Containerfile" "$here" >/dev/null
podman rmi "$base" >/dev/null 2>&1 || true
rootfs_drop_previous
rootfs_log "built $image (stamp $stamp, $(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%d MB", $1 / 1e6 }')) in $(($(date +%s) - ROOTFS_STARTED)) s"
echo "$image"
