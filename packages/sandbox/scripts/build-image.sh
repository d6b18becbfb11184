#!/usr/bin/env bash
# Builds the sandbox image offline from Debian's packages (the functions of rootfs.sh, shared with the service's
# image): debootstrap (bookworm, minbase) from the machine's configured Debian mirror, the packages of
# ../image/packages.txt, npm, an unprivileged user `agent` (uid 1000), then `podman import`. Cached: when an image of that name already carries the same content stamp (this script, the
# package list, rootfs.sh, suite and architecture), it does nothing.
#
# Usage: build-image.sh [IMAGE]          (default: $SANDBOX_IMAGE or localhost/codex-agent-sandbox:<package version>)
# Environment: SANDBOX_IMAGE_MIRROR (a Debian mirror URL; default: read from /etc/apt/sources.list[.d]),
#              SANDBOX_IMAGE_SUITE (default bookworm), SANDBOX_IMAGE_CACHE (kept .deb files; default
#              /var/cache/codex-agent-sandbox), SANDBOX_IMAGE_FORCE=1 (build even when up to date).
# Needs root, podman and debootstrap (CI: apt-get install -y podman runc debootstrap).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pkgdir="$(dirname "$here")"
ROOTFS_NAME=codex-agent-sandbox
ROOTFS_MIRROR="${SANDBOX_IMAGE_MIRROR:-}"
ROOTFS_CACHE="${SANDBOX_IMAGE_CACHE:-/var/cache/codex-agent-sandbox}"
# shellcheck source=rootfs.sh
. "$here/rootfs.sh"

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$pkgdir/package.json" | head -n 1)"
image="${1:-${SANDBOX_IMAGE:-localhost/codex-agent-sandbox:${version}}}"
suite="${SANDBOX_IMAGE_SUITE:-bookworm}"
arch="$(dpkg --print-architecture)"
list="$pkgdir/image/packages.txt"
label="io.codex-agent-api.sandbox.stamp"

rootfs_require
# One build at a time (test workers and CI may start it together); a second one then finds the image up to date.
rootfs_lock

packages="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$' | LC_ALL=C sort -u | paste -sd, -)"
[ -n "$packages" ] || rootfs_fail "no packages in $list"
stamp="$( { cat "$0" "$here/rootfs.sh"; printf '%s\n' "$packages" "$suite" "$arch"; } | sha256sum | cut -c1-32)"

if [ "${SANDBOX_IMAGE_FORCE:-0}" != 1 ] && rootfs_up_to_date "$image" "$label" "$stamp"; then exit 0; fi

mirror="$(rootfs_mirror "$suite")"
rootfs_start
rootfs_debootstrap "$suite" "$mirror" "$packages"
root="$ROOTFS_ROOT"

# The user commands run as; a workspace and mount points the sandbox backend uses.
chroot "$root" /usr/sbin/groupadd --gid 1000 agent
chroot "$root" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash agent
install -d -m 0755 -o 1000 -g 1000 "$root/workspace"
install -d -m 0755 "$root/opt/codex" "$root/run/egress"
# npm after debootstrap, with apt: debootstrap cannot configure its hundreds of node-* packages in its base
# ordering ("Failure while configuring base packages"); apt-get installs them in order. (apt inside the sandbox,
# when an operator gives it network, keeps the same mirror in sources.list.)
rootfs_apt_install "$mirror" "$suite" npm
rootfs_shrink
printf '%s\n' "$stamp" >"$root/etc/codex-agent-sandbox-stamp"

rootfs_import "$image" "$label" "$stamp" "WORKDIR /workspace" 'CMD ["sleep", "infinity"]'
# The image this one replaces, unless a container still uses it.
rootfs_drop_previous
rootfs_log "built $image (stamp $stamp) in $(($(date +%s) - ROOTFS_STARTED)) s"
echo "$image"
