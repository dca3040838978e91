#!/usr/bin/env bash
# A Docker engine that can build the image (BuildKit) and run it, on a machine without one.
#
# Nothing happens when an engine already answers and a BuildKit client is there. Otherwise, on a
# Debian-family machine, Debian's `docker.io` (dockerd, containerd, runc and /usr/bin/docker,
# whose built-in BuildKit the build needs) is installed from Debian's archive, and dockerd is
# started in the background unless one is running. Installing needs root (apt-get): the script
# says what it installs before it does, and stops with a message when it is not root. Starting
# dockerd needs root as well.
#
# Environment: DOCKERD_LOG  where a dockerd started here writes (default /var/log/dockerd.log).
set -euo pipefail

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"
START_TIMEOUT=60

say() { printf 'engine: %s\n' "$*" >&2; }
fail() { printf 'engine: error: %s\n' "$*" >&2; exit 1; }

engine_answers() { command -v docker > /dev/null && docker info > /dev/null 2>&1; }

buildkit_client() {
    # A client with the buildx plugin, or Debian's 20.10 client with BuildKit built in.
    { command -v docker > /dev/null && docker buildx version > /dev/null 2>&1; } \
        || [[ -x /usr/bin/docker ]]
}

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    else
        fail "'$*' needs root: run 'sudo $0', or install the packages yourself"
    fi
}

if engine_answers && buildkit_client; then
    say "a Docker engine answers and a BuildKit client is installed: nothing to do"
    exit 0
fi

if ! command -v dockerd > /dev/null || ! buildkit_client; then
    command -v apt-get > /dev/null \
        || fail "no Docker engine or BuildKit client, and no apt-get to install Debian's docker.io"
    say "installing docker.io from Debian's archive (apt-get, as root)"
    # Wait for another package install to finish instead of failing on dpkg's lock.
    as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends docker.io > /dev/null
fi

if ! engine_answers; then
    if pgrep -x dockerd > /dev/null; then
        say "dockerd runs but does not answer yet; waiting for it"
    else
        say "starting dockerd (log: $DOCKERD_LOG)"
        # Its own session, so that the engine outlives the make or CI step that started it.
        as_root setsid dockerd --storage-driver=overlay2 >> "$DOCKERD_LOG" 2>&1 < /dev/null &
    fi
    for _ in $(seq "$START_TIMEOUT"); do
        engine_answers && break
        sleep 1
    done
    engine_answers || fail "dockerd did not answer within ${START_TIMEOUT}s; see $DOCKERD_LOG"
    say "dockerd is up (pid $(pgrep -x -o dockerd))"
fi
