#!/usr/bin/env bash
# Build the image kopf-scheduler:<version> from the Dockerfile, on a machine with a Docker engine
# (scripts/image/engine.sh makes one here).
#
#   scripts/image/build.sh              # prints the image reference on stdout, the rest on stderr
#
# The base is the Dockerfile's public default (its PYTHON_IMAGE) when it is present or can be
# pulled; otherwise a local base that scripts/image/base.sh makes once per Debian release and
# caches. An image built on the local base carries this machine's CA bundle (label
# io.kopf-scheduler.local-base): never push it; push one built on the public base.
#
# The version comes from pyproject.toml, the one place it is written; the build checks the
# installed package agrees before it labels the image with it. A rebuild of an unchanged tree
# comes entirely from Docker's build cache.
#
# Environment:
#   IMAGE         the reference to tag (default kopf-scheduler:<version>)
#   PYTHON_IMAGE  the base for both stages (default: the Dockerfile's, else the local base)
#   BASE_RELEASE  Debian release of the local base: bookworm (default) or trixie
#   DOCKER        the docker client (default: one with buildx, else Debian's /usr/bin/docker,
#                 whose BuildKit is built in)
#   PYTHON        an interpreter with tomllib, to read pyproject.toml (default python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PULL_TIMEOUT=60

say() { printf 'image: %s\n' "$*" >&2; }
fail() { printf 'image: error: %s\n' "$*" >&2; exit 1; }

if [[ -z "${DOCKER:-}" ]]; then
    if command -v docker > /dev/null && docker buildx version > /dev/null 2>&1; then
        DOCKER=docker
    elif [[ -x /usr/bin/docker ]]; then
        DOCKER=/usr/bin/docker
    else
        fail "no docker client with BuildKit: install buildx, or run scripts/image/engine.sh"
    fi
fi
export DOCKER DOCKER_BUILDKIT=1
"$DOCKER" info > /dev/null 2>&1 || fail "no Docker engine answers: run scripts/image/engine.sh"

version=$("${PYTHON:-python3}" -c \
    'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])') \
    || fail "cannot read the version from pyproject.toml"
IMAGE="${IMAGE:-kopf-scheduler:$version}"

base_available() {
    "$DOCKER" image inspect "$1" > /dev/null 2>&1 \
        || timeout "$PULL_TIMEOUT" "$DOCKER" pull --quiet "$1" > /dev/null 2>&1
}

if [[ -z "${PYTHON_IMAGE:-}" ]]; then
    public=$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)
    [[ -n "$public" ]] || fail "the Dockerfile has no default PYTHON_IMAGE"
    if base_available "$public"; then
        PYTHON_IMAGE="$public"
    else
        say "$public cannot be pulled: building on a local base instead"
        PYTHON_IMAGE=$(scripts/image/base.sh "${BASE_RELEASE:-bookworm}")
    fi
fi

if "$DOCKER" image inspect --format '{{index .Config.Labels "io.kopf-scheduler.local-base"}}' \
    "$PYTHON_IMAGE" 2> /dev/null | grep -q .; then
    say "the base $PYTHON_IMAGE contains this machine's CA bundle: never push $IMAGE"
fi

revision=$(git rev-parse HEAD 2> /dev/null || echo unknown)
previous=$("$DOCKER" image inspect --format '{{.Id}}' "$IMAGE" 2> /dev/null || true)
say "building $IMAGE (version $version) on $PYTHON_IMAGE"
"$DOCKER" build \
    --build-arg "PYTHON_IMAGE=$PYTHON_IMAGE" \
    --build-arg "VERSION=$version" \
    --build-arg "REVISION=$revision" \
    --tag "$IMAGE" \
    . >&2
# The image this tag named before, now untagged: remove it unless a container still uses it.
current=$("$DOCKER" image inspect --format '{{.Id}}' "$IMAGE")
if [[ -n "$previous" && "$previous" != "$current" ]]; then
    "$DOCKER" image rm "$previous" > /dev/null 2>&1 || true
fi
say "built $IMAGE ($("$DOCKER" image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
echo "$IMAGE"
