#!/usr/bin/env bash
# A local Python base image for the Dockerfile's PYTHON_IMAGE, for machines that cannot pull
# the public one: Debian's own Python from a minimal debootstrap root filesystem, imported into
# Docker as local/python:<python>-<release>. Built only when `docker image inspect` does not find
# that tag, so it is made once per Debian release and reused.
#
#   scripts/image/base.sh [RELEASE]     # bookworm (Python 3.11, the default) or trixie (3.13)
#
# Prints the tag on stdout; everything else goes to stderr.
#
# The root filesystem gets this machine's CA bundle and pip configuration: HTTPS from here to
# PyPI is re-signed by the machine's own CAs, so pip in the builder stage needs them. The image
# therefore carries this machine's CAs: NEVER PUSH IT, OR AN IMAGE BUILT ON IT, TO ANY REGISTRY.
# Both carry the label io.kopf-scheduler.local-base saying so.
#
# debootstrap is installed from Debian's archive when missing; that and debootstrap itself need
# root. Environment: DOCKER (default docker), DEBIAN_MIRROR (default: apt's first source).
set -euo pipefail

RELEASE="${1:-bookworm}"
DOCKER="${DOCKER:-docker}"

say() { printf 'base: %s\n' "$*" >&2; }
fail() { printf 'base: error: %s\n' "$*" >&2; exit 1; }

case "$RELEASE" in
    bookworm) python=3.11 ;;
    trixie) python=3.13 ;;
    *) fail "unknown Debian release '$RELEASE' (bookworm or trixie)" ;;
esac
TAG="local/python:${python}-${RELEASE}"

if "$DOCKER" image inspect "$TAG" > /dev/null 2>&1; then
    say "$TAG exists: reusing it"
    echo "$TAG"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || fail "making $TAG needs root (debootstrap): run 'sudo $0 $RELEASE'"
if ! command -v debootstrap > /dev/null; then
    say "installing debootstrap from Debian's archive (apt-get, as root)"
    # Wait for another package install to finish instead of failing on dpkg's lock.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends debootstrap > /dev/null
fi

apt_mirror() {
    local uri
    uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2; exit}')
    [[ -n "$uri" ]] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2; exit}')
    echo "${uri:-http://deb.debian.org/debian}"
}
mirror="${DEBIAN_MIRROR:-$(apt_mirror)}"

rootfs=$(mktemp -d /tmp/kopf-scheduler-base.XXXXXX)
debootstrap_group=""
cleanup() {
    # Stop a debootstrap still at work (the whole process group: it runs dpkg and chroots), undo
    # the mounts it makes inside the tree (/proc at least), then remove the tree.
    if [[ -n "$debootstrap_group" ]]; then
        kill -TERM -- "-$debootstrap_group" 2> /dev/null || true
        wait "$debootstrap_group" 2> /dev/null || true
    fi
    awk -v root="$rootfs/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r \
        | while read -r mount; do umount -l "$mount"; done
    rm -rf --one-file-system "$rootfs"
    rm -f "$rootfs.log"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

say "making $TAG: debootstrap $RELEASE from $mirror (about a minute)"
# In a session (and process group) of its own, so that cleanup() can stop all of it.
setsid debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
    "$RELEASE" "$rootfs" "$mirror" > "$rootfs.log" 2>&1 &
debootstrap_group=$!
if ! wait "$debootstrap_group"; then
    debootstrap_group=""
    tail -n 20 "$rootfs.log" >&2
    fail "debootstrap failed (its last lines are above)"
fi
debootstrap_group=""

cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
if [[ -f /etc/pip.conf ]]; then
    # find-links names a directory that only this machine has.
    grep -v '^[[:space:]]*find-links' /etc/pip.conf > "$rootfs/etc/pip.conf"
fi
ln -sf python3 "$rootfs/usr/bin/python" # the Dockerfile calls `python`
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

# PIP_BREAK_SYSTEM_PACKAGES: Debian's Python refuses `pip install` outside a venv (PEP 668);
# the Dockerfile installs into the image's system Python, as it does on the public base.
tar -C "$rootfs" -c . | "$DOCKER" import \
    --change 'ENV PIP_BREAK_SYSTEM_PACKAGES=1' \
    --change 'CMD ["python3"]' \
    --change "LABEL io.kopf-scheduler.local-base=\"Debian $RELEASE with this machine's CA bundle: never push\"" \
    - "$TAG" > /dev/null
say "made $TAG ($("$DOCKER" image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}'))"
say "it contains this machine's CA bundle: never push it, or an image built on it"
echo "$TAG"
