#!/usr/bin/env bash
# Builds the sandbox image offline from Debian's packages: debootstrap (bookworm, minbase) from the machine's
# configured Debian mirror, the packages of ../image/packages.txt, an unprivileged user `agent` (uid 1000), then
# `podman import`. Cached: when an image of that name already carries the same content stamp (this script, the
# package list, suite and architecture), it does nothing.
#
# Usage: build-image.sh [IMAGE]          (default: $SANDBOX_IMAGE or localhost/codex-agent-sandbox:<package version>)
# Environment: SANDBOX_IMAGE_MIRROR (a Debian mirror URL; default: read from /etc/apt/sources.list[.d]),
#              SANDBOX_IMAGE_SUITE (default bookworm), SANDBOX_IMAGE_CACHE (kept .deb files; default
#              /var/cache/codex-agent-sandbox), SANDBOX_IMAGE_FORCE=1 (build even when up to date).
# Needs root, podman and debootstrap (CI: apt-get install -y podman runc debootstrap).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pkgdir="$(dirname "$here")"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$pkgdir/package.json" | head -n 1)"
image="${1:-${SANDBOX_IMAGE:-localhost/codex-agent-sandbox:${version}}}"
suite="${SANDBOX_IMAGE_SUITE:-bookworm}"
cache="${SANDBOX_IMAGE_CACHE:-/var/cache/codex-agent-sandbox}"
arch="$(dpkg --print-architecture)"
list="$pkgdir/image/packages.txt"
label="io.codex-agent-api.sandbox.stamp"

log() { printf 'build-image: %s\n' "$*" >&2; }
fail() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap and chroot need it)"
command -v podman >/dev/null || fail "podman is not installed (apt-get install -y podman runc)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install -y debootstrap)"

# One build at a time (test workers and CI may start it together); a second one then finds the image up to date.
exec 9>/var/lock/codex-agent-sandbox-build.lock
flock 9

packages="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$' | LC_ALL=C sort -u | paste -sd, -)"
[ -n "$packages" ] || fail "no packages in $list"
stamp="$( { cat "$0"; printf '%s\n' "$packages" "$suite" "$arch"; } | sha256sum | cut -c1-32)"

if [ "${SANDBOX_IMAGE_FORCE:-0}" != 1 ] && podman image exists "$image"; then
  have="$(podman image inspect --format "{{index .Labels \"$label\"}}" "$image" 2>/dev/null || true)"
  if [ "$have" = "$stamp" ]; then
    log "up to date: $image (stamp $stamp); nothing to do"
    echo "$image"
    exit 0
  fi
  log "$image exists with stamp '${have:-none}', want $stamp: rebuilding"
  previous="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
fi

# The mirror: the first Debian archive (not -security, not -updates) configured for apt on this machine.
mirror="${SANDBOX_IMAGE_MIRROR:-}"
if [ -z "$mirror" ]; then
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: a stanza whose Suites include the suite itself; the URI of that stanza.
    mirror="$(awk -v s="$suite" '
      /^[[:space:]]*$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
      END { if (uri != "" && ok) print uri }' "$f" | head -n 1)"
    [ -n "$mirror" ] && break
  done
fi
if [ -z "$mirror" ]; then
  mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v s="$suite" '$1 == "deb" { u = $2; if ($2 ~ /^\[/) { u = $3; su = $4 } else su = $3; if (su == s) { print u; exit } }')"
fi
[ -n "$mirror" ] || fail "no Debian mirror for '$suite' in /etc/apt/sources.list[.d]; set SANDBOX_IMAGE_MIRROR"

work="$(mktemp -d /var/tmp/codex-agent-sandbox-build.XXXXXX)"
root="$work/rootfs"
cleanup() {
  for m in "$root/var/cache/apt/archives" "$root/proc" "$root/sys" "$root/dev/pts" "$root/dev"; do mountpoint -q "$m" 2>/dev/null && umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

start=$(date +%s)
mkdir -p "$cache"
log "debootstrap $suite ($arch, minbase) from $mirror with: $packages"
if ! debootstrap --variant=minbase --arch="$arch" --cache-dir="$cache" --include="$packages" \
  "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  fail "debootstrap failed (log above)"
fi
log "debootstrap done in $(($(date +%s) - start)) s"

# The user commands run as; a workspace and mount points the sandbox backend uses.
chroot "$root" /usr/sbin/groupadd --gid 1000 agent
chroot "$root" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash agent
install -d -m 0755 -o 1000 -g 1000 "$root/workspace"
install -d -m 0755 "$root/opt/codex" "$root/run/egress"
# apt inside the sandbox (when an operator gives it network) uses the same mirror.
printf 'deb %s %s main\n' "$mirror" "$suite" >"$root/etc/apt/sources.list"
# npm after debootstrap, with apt: debootstrap cannot configure its hundreds of node-* packages in its base
# ordering ("Failure while configuring base packages"); apt-get installs them in order.
late="npm"
log "apt-get install $late"
[ -s "$root/etc/resolv.conf" ] || cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# (its .debs kept with debootstrap's, for the next build)
mkdir -p "$cache/partial"
mount --bind "$cache" "$root/var/cache/apt/archives"
if ! { chroot "$root" apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends $late; } \
  >"$work/apt.log" 2>&1; then
  tail -n 30 "$work/apt.log" >&2
  fail "apt-get install $late failed (log above)"
fi
umount "$root/var/cache/apt/archives" "$root/proc"
# (the build host's name servers are nothing of the image's: a container has no DNS of its own)
: >"$root/etc/resolv.conf"
# Smaller: no caches, lists, docs or man pages (copyright files stay).
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log \
  "$root"/usr/share/man/* "$root"/usr/share/info/*
find "$root/usr/share/doc" -mindepth 2 ! -name copyright -type f -delete 2>/dev/null || true
printf '%s\n' "$stamp" >"$root/etc/codex-agent-sandbox-stamp"

size="$(du -sm "$root" | cut -f1)"
log "root filesystem: ${size} MB; importing as $image"
tar --numeric-owner -C "$root" -cf - . | podman import \
  --change "LABEL $label=$stamp" \
  --change "WORKDIR /workspace" \
  --change 'CMD ["sleep", "infinity"]' \
  --message "codex-agent-sandbox $stamp" - "$image" >/dev/null
# The image this one replaces, unless a container still uses it.
if [ -n "${previous:-}" ] && podman rmi "$previous" >/dev/null 2>&1; then log "removed the previous image ${previous:0:12}"; fi
log "built $image (stamp $stamp) in $(($(date +%s) - start)) s"
echo "$image"
