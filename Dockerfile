# kopf-scheduler container image.
#
#   docker build -t kopf-scheduler:dev .
#
# Needs BuildKit (the default builder since Docker 23) for RUN --mount.
#
# Stage 1 builds wheels for the project and every dependency; stage 2 installs those wheels
# offline into a clean python:3.12-slim, with no compiler, no build cache and no source tree.
# The result runs as a fixed non-root UID and writes nothing at run time, so it works with
# readOnlyRootFilesystem: true (bytecode is compiled here, at build time).

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
# README.m[d]: the wheel's long description when the file exists; a pattern that matches
# nothing is no error when another source (pyproject.toml) matches.
COPY pyproject.toml README.m[d] ./
COPY operator ./operator
RUN pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kopf-scheduler" \
      org.opencontainers.image.description="A Kubernetes scheduler as a kopf operator: kube-scheduler's decisions, explained." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/kopf-scheduler/kopf-scheduler" \
      org.opencontainers.image.base.name="docker.io/library/python:3.12-slim"
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
# only source is that wheelhouse, built from this tree, so there is nothing else to pin against.
# hadolint ignore=DL3013
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels --compile kopf-scheduler \
    && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    && kopf-scheduler --help > /dev/null
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["kopf-scheduler"]
CMD ["run", "--config", "/etc/kopf-scheduler/config.yaml"]
