# Shared by the image builds (sourced, not run): a root filesystem made offline from Debian's packages with
# debootstrap from the machine's configured Debian mirror, then imported into Podman as an image carrying a content
# stamp. Used by build-image.sh (the sandbox image) and deploy/image/build.sh (the service's image).
#
# The caller sets `set -euo pipefail` and ROOTFS_NAME (a short name for logs, locks and scratch directories), then:
#   rootfs_require                           root, podman and debootstrap, or a clear failure
#   rootfs_lock                              one build of this name at a time (a second then finds it up to date)
#   rootfs_up_to_date IMAGE LABEL STAMP      0 (and the image name on stdout) when IMAGE carries STAMP already;
#                                            otherwise ROOTFS_PREVIOUS is the image it replaces (or empty)
#   rootfs_mirror SUITE                      the mirror URL (ROOTFS_MIRROR, else the first apt source for SUITE)
#   rootfs_start                             ROOTFS_WORK (scratch, removed at exit) and ROOTFS_ROOT in it
#   rootfs_debootstrap SUITE MIRROR PKGS     debootstrap --variant=minbase with PKGS (comma-separated)
#   rootfs_apt_install MIRROR SUITE PKG…     apt-get in the chroot (for what debootstrap cannot order)
#   rootfs_shrink                            no caches, lists, docs, man pages or name servers of the build host
#   rootfs_import IMAGE LABEL STAMP CHANGE…  tar | podman import, each CHANGE a Containerfile instruction
#   rootfs_drop_previous                     removes ROOTFS_PREVIOUS unless a container still uses it
# Environment: ROOTFS_CACHE (kept .deb files; default /var/cache/<ROOTFS_NAME>).

rootfs_log() { printf '%s: %s\n' "$ROOTFS_NAME" "$*" >&2; }
rootfs_fail() {
  rootfs_log "error: $*"
  exit 1
}

rootfs_require() {
  [ "$(id -u)" = 0 ] || rootfs_fail "must run as root (debootstrap and chroot need it)"
  command -v podman >/dev/null || rootfs_fail "podman is not installed (apt-get install -y podman runc)"
  command -v debootstrap >/dev/null || rootfs_fail "debootstrap is not installed (apt-get install -y debootstrap)"
}

rootfs_lock() {
  exec 9>"/var/lock/$ROOTFS_NAME-build.lock"
  flock 9
}

rootfs_up_to_date() {
  local image="$1" label="$2" stamp="$3" have
  ROOTFS_PREVIOUS=""
  podman image exists "$image" || return 1
  have="$(podman image inspect --format "{{index .Labels \"$label\"}}" "$image" 2>/dev/null || true)"
  if [ "$have" = "$stamp" ]; then
    rootfs_log "up to date: $image (stamp $stamp); nothing to do"
    echo "$image"
    return 0
  fi
  rootfs_log "$image exists with stamp '${have:-none}', want $stamp: rebuilding"
  ROOTFS_PREVIOUS="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
  return 1
}

rootfs_mirror() {
  local suite="$1" mirror="${ROOTFS_MIRROR:-}" f
  if [ -z "$mirror" ]; then
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      # deb822: the URI of a stanza whose Suites include the suite; for a suite the host does not use (a newer
      # release than its own), the URI of the first stanza of a release itself (a suite without -security,
      # -updates…), the same archive serving every release.
      mirror="$(awk -v s="$suite" '
        function done() { if (uri != "" && ok) { print uri; exit } if (uri != "" && rel && other == "") other = uri }
        /^[[:space:]]*$/ { done(); uri = ""; ok = 0; rel = 0; next }
        /^URIs:/ { uri = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) { if ($i == s) ok = 1; if ($i !~ /-/) rel = 1 } }
        END { done(); if (other != "") print other }' "$f" | head -n 1)"
      [ -n "$mirror" ] && break
    done
  fi
  if [ -z "$mirror" ]; then
    mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v s="$suite" '$1 == "deb" { u = $2; if ($2 ~ /^\[/) { u = $3; su = $4 } else su = $3; if (su == s) { print u; exit } }')"
  fi
  [ -n "$mirror" ] || rootfs_fail "no Debian mirror for '$suite' in /etc/apt/sources.list[.d]; set the mirror variable"
  echo "$mirror"
}

rootfs_cleanup() {
  local m
  for m in "$ROOTFS_ROOT/var/cache/apt/archives" "$ROOTFS_ROOT/proc" "$ROOTFS_ROOT/sys" "$ROOTFS_ROOT/dev/pts" \
    "$ROOTFS_ROOT/dev"; do
    if mountpoint -q "$m" 2>/dev/null; then umount -l "$m"; fi
  done
  rm -rf "$ROOTFS_WORK"
}

rootfs_start() {
  ROOTFS_CACHE="${ROOTFS_CACHE:-/var/cache/$ROOTFS_NAME}"
  ROOTFS_WORK="$(mktemp -d "/var/tmp/$ROOTFS_NAME-build.XXXXXX")"
  ROOTFS_ROOT="$ROOTFS_WORK/rootfs"
  ROOTFS_STARTED=$(date +%s)
  trap rootfs_cleanup EXIT
  mkdir -p "$ROOTFS_CACHE"
}

rootfs_debootstrap() {
  local suite="$1" mirror="$2" packages="$3" arch
  arch="$(dpkg --print-architecture)"
  rootfs_log "debootstrap $suite ($arch, minbase) from $mirror with: $packages"
  if ! debootstrap --variant=minbase --arch="$arch" --cache-dir="$ROOTFS_CACHE" --include="$packages" \
    "$suite" "$ROOTFS_ROOT" "$mirror" >"$ROOTFS_WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$ROOTFS_WORK/debootstrap.log" >&2
    rootfs_fail "debootstrap failed (log above)"
  fi
  rootfs_log "debootstrap done in $(($(date +%s) - ROOTFS_STARTED)) s"
}

rootfs_apt_install() {
  local mirror="$1" suite="$2"
  shift 2
  rootfs_log "apt-get install $*"
  printf 'deb %s %s main\n' "$mirror" "$suite" >"$ROOTFS_ROOT/etc/apt/sources.list"
  [ -s "$ROOTFS_ROOT/etc/resolv.conf" ] || cp /etc/resolv.conf "$ROOTFS_ROOT/etc/resolv.conf"
  mount -t proc proc "$ROOTFS_ROOT/proc"
  # (the .debs kept with debootstrap's, for the next build)
  mkdir -p "$ROOTFS_CACHE/partial"
  mount --bind "$ROOTFS_CACHE" "$ROOTFS_ROOT/var/cache/apt/archives"
  if ! { chroot "$ROOTFS_ROOT" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS_ROOT" apt-get install -y -qq --no-install-recommends "$@"; } \
    >"$ROOTFS_WORK/apt.log" 2>&1; then
    tail -n 30 "$ROOTFS_WORK/apt.log" >&2
    rootfs_fail "apt-get install $* failed (log above)"
  fi
  umount "$ROOTFS_ROOT/var/cache/apt/archives" "$ROOTFS_ROOT/proc"
}

rootfs_shrink() {
  # (the build host's name servers are nothing of the image's: a container gets its own, or none)
  : >"$ROOTFS_ROOT/etc/resolv.conf"
  rm -rf "$ROOTFS_ROOT"/var/cache/apt/archives/*.deb "$ROOTFS_ROOT"/var/lib/apt/lists/* \
    "$ROOTFS_ROOT"/var/log/*.log "$ROOTFS_ROOT"/usr/share/man/* "$ROOTFS_ROOT"/usr/share/info/*
  # (copyright files stay)
  find "$ROOTFS_ROOT/usr/share/doc" -mindepth 2 ! -name copyright -type f -delete 2>/dev/null || true
}

rootfs_import() {
  local image="$1" label="$2" stamp="$3" size change
  shift 3
  local args=(--change "LABEL $label=$stamp")
  for change in "$@"; do args+=(--change "$change"); done
  size="$(du -sm "$ROOTFS_ROOT" | cut -f1)"
  rootfs_log "root filesystem: ${size} MB; importing as $image"
  tar --numeric-owner -C "$ROOTFS_ROOT" -cf - . |
    podman import "${args[@]}" --message "$ROOTFS_NAME $stamp" - "$image" >/dev/null
}

rootfs_drop_previous() {
  if [ -n "${ROOTFS_PREVIOUS:-}" ] && podman rmi "$ROOTFS_PREVIOUS" >/dev/null 2>&1; then
    rootfs_log "removed the previous image ${ROOTFS_PREVIOUS:0:12}"
  fi
}
