# kopf-scheduler container image.
#
#   make image                  # kopf-scheduler:<version>, see scripts/image/build.sh
#   docker build --build-arg VERSION="$(make -s version)" -t kopf-scheduler:dev .
#
# Needs BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1 before that) for
# RUN --mount.
#
# Stage 1 builds wheels for the project and every dependency, at the versions requirements.lock
# pins; stage 2 installs those wheels offline into a clean Python base, with no compiler, no
# build cache and no source tree. The result runs as a fixed non-root UID and writes nothing at
# run time, so it works with readOnlyRootFilesystem: true (bytecode is compiled here, at build
# time).
#
# PYTHON_IMAGE chooses the base of both stages. It needs python and pip on PATH, pip allowed to
# install outside a venv, groupadd/useradd and apt sources; scripts/image/base.sh makes one
# locally where the public image cannot be pulled.

ARG PYTHON_IMAGE=python:3.12-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# A C toolchain, only for a dependency that has no binary wheel for this platform. The builder
# stage is thrown away, so the Debian package versions are left to the base image's release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install --yes --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The dependencies first, in a layer of their own that a change to the sources does not
# invalidate: pyproject.toml's runtime dependencies at the versions requirements.lock pins.
COPY pyproject.toml requirements.lock ./
RUN python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
        > runtime-requirements.txt \
    && pip wheel --wheel-dir /wheels/deps --constraint requirements.lock \
        --requirement runtime-requirements.txt
# LICENSE goes into the wheel's metadata, and so into the image. README.m[d]: the wheel's long
# description when the file exists; a pattern that matches nothing is no error when another
# source (LICENSE) matches.
COPY LICENSE README.m[d] ./
COPY operator ./operator
RUN pip wheel --wheel-dir /wheels/app --no-deps .

FROM ${PYTHON_IMAGE}
ARG PYTHON_IMAGE
# VERSION: the package's version (pyproject.toml); the build fails when it says otherwise.
# Left out, the version label stays empty.
ARG VERSION
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kopf-scheduler" \
      org.opencontainers.image.description="A Kubernetes scheduler as a kopf operator: kube-scheduler's decisions, explained." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/kopf-scheduler/kopf-scheduler" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
# A passwd entry for the runtime UID: getpass.getuser() (used by kopf for its identity)
# raises for a UID that has none.
RUN groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin nonroot
# The wheels are bind-mounted from the builder, so they leave no layer behind. --no-index: the
# only source is that wheelhouse, built at the locked versions. The dependencies' layer stays
# cached while only the sources change.
# hadolint ignore=DL3013
RUN --mount=type=bind,from=builder,source=/wheels/deps,target=/wheels/deps \
    pip install --no-index --compile /wheels/deps/*.whl
# hadolint ignore=DL3013
RUN --mount=type=bind,from=builder,source=/wheels/app,target=/wheels/app \
    pip install --no-index --compile /wheels/app/*.whl \
    && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    && installed="$(kopf-scheduler --version)" \
    && if [ -n "${VERSION}" ] && [ "${installed}" != "kopf-scheduler ${VERSION}" ]; then \
        echo "VERSION=${VERSION}, but the package says: ${installed}" >&2; exit 1; \
    fi
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["kopf-scheduler"]
CMD ["run", "--config", "/etc/kopf-scheduler/config.yaml"]
