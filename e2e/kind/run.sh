#!/usr/bin/env bash
# End-to-end run on a throw-away kind cluster:
#   create the cluster (1 control plane + 3 workers), build the image, load it into the nodes,
#   install charts/kopf-scheduler with e2e/kind/values.yaml (release kopf-scheduler in the
#   namespace kopf-scheduler, which enforces the restricted Pod Security level), wait for the
#   rollout and the leader Lease, then run `python -m pytest e2e` with E2E_CLUSTER=kind and
#   KUBECONFIG pointing at the cluster.
#
# Needs docker, kind, kubectl and helm (v3) on PATH, and the project's virtualenv (`make venv`).
#
# Environment:
#   KIND_CLUSTER_NAME  cluster name (default kopf-scheduler-e2e); an existing cluster of that
#                      name is reused
#   KIND_NODE_IMAGE    node image for `kind create cluster --image` (default: kind's own)
#   KEEP_CLUSTER=1     leave the cluster running afterwards (default: delete it)
#   ARTIFACTS_DIR      kubeconfig and, on failure, diagnostics and `kind export logs`
#                      (default: $TMPDIR/kopf-scheduler-kind-e2e)
#   PYTHON             interpreter for pytest (default: .venv/bin/python, else python3)
#   KWOK_VERSION       kwok release installed in the cluster for the fake nodes (default v0.7.0)
#   KUBECTL, KIND, DOCKER, HELM   the tools (default: from PATH)
# Arguments are passed on to pytest, e.g. `e2e/kind/run.sh -k preemption -x`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

CLUSTER_NAME="${KIND_CLUSTER_NAME:-kopf-scheduler-e2e}"
IMAGE="kopf-scheduler:e2e" # what e2e/kind/values.yaml deploys
NAMESPACE="kopf-scheduler"
RELEASE="kopf-scheduler"
KIND="${KIND:-kind}"
KUBECTL="${KUBECTL:-kubectl}"
DOCKER="${DOCKER:-docker}"
export HELM="${HELM:-helm}" # e2e/test_chart.py uses it too
ARTIFACTS_DIR="${ARTIFACTS_DIR:-${TMPDIR:-/tmp}/kopf-scheduler-kind-e2e}"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

log() { printf '\n==> %s\n' "$*" >&2; }

for tool in "$DOCKER" "$KIND" "$KUBECTL" "$HELM" "$PYTHON"; do
    command -v "$tool" > /dev/null || { echo "error: '$tool' not found" >&2; exit 2; }
done

mkdir -p "$ARTIFACTS_DIR"
export KUBECONFIG="$ARTIFACTS_DIR/kubeconfig"

diagnose() {
    local out="$ARTIFACTS_DIR/diagnostics"
    mkdir -p "$out"
    log "collecting diagnostics in $out"
    "$KUBECTL" get nodes -o wide > "$out/nodes.txt" 2>&1 || true
    "$KUBECTL" get pods -A -o wide > "$out/pods.txt" 2>&1 || true
    "$KUBECTL" get events -A --sort-by=.lastTimestamp > "$out/events.txt" 2>&1 || true
    "$KUBECTL" -n "$NAMESPACE" describe deployment,replicaset,pods > "$out/describe.txt" 2>&1 || true
    "$KUBECTL" -n "$NAMESPACE" get lease -o yaml > "$out/leases.yaml" 2>&1 || true
    "$HELM" -n "$NAMESPACE" status "$RELEASE" --show-resources > "$out/helm-status.txt" 2>&1 || true
    "$KUBECTL" -n "$NAMESPACE" logs -l app.kubernetes.io/name=kopf-scheduler \
        --all-containers --prefix --tail=-1 > "$out/scheduler.log" 2>&1 || true
    "$KUBECTL" -n "$NAMESPACE" logs -l app.kubernetes.io/name=kopf-scheduler \
        --all-containers --prefix --previous --tail=-1 > "$out/scheduler-previous.log" 2>&1 || true
    "$KIND" export logs "$out/kind" --name "$CLUSTER_NAME" > /dev/null 2>&1 || true
    tail -n 40 "$out/scheduler.log" >&2 || true
}

on_exit() {
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        diagnose
    fi
    if [[ "${KEEP_CLUSTER:-0}" == "1" ]]; then
        log "keeping cluster '$CLUSTER_NAME'; KUBECONFIG=$KUBECONFIG"
    else
        log "deleting cluster '$CLUSTER_NAME'"
        "$KIND" delete cluster --name "$CLUSTER_NAME" || true
    fi
    exit "$rc"
}
trap on_exit EXIT

if "$KIND" get clusters 2> /dev/null | grep -qx "$CLUSTER_NAME"; then
    log "reusing kind cluster '$CLUSTER_NAME'"
    "$KIND" get kubeconfig --name "$CLUSTER_NAME" > "$KUBECONFIG"
else
    log "creating kind cluster '$CLUSTER_NAME'"
    create_args=(--name "$CLUSTER_NAME" --config "$ROOT/e2e/kind/kind-config.yaml" --wait 180s)
    if [[ -n "${KIND_NODE_IMAGE:-}" ]]; then create_args+=(--image "$KIND_NODE_IMAGE"); fi
    "$KIND" create cluster "${create_args[@]}" --kubeconfig "$KUBECONFIG"
fi
"$KUBECTL" wait --for=condition=Ready nodes --all --timeout=180s

KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
log "installing kwok $KWOK_VERSION in the cluster, with the local control plane's stages"
# The e2e suite creates fake nodes (annotation kwok.x-k8s.io/node=fake); kwok plays their kubelet.
# The stages are the ones the local control plane uses, so pod deletion honours grace periods.
"$KUBECTL" apply -f "https://github.com/kubernetes-sigs/kwok/releases/download/${KWOK_VERSION}/kwok.yaml"
"$KUBECTL" -n kube-system rollout status deployment/kwok-controller --timeout=180s
"$KUBECTL" apply -f "$ROOT/e2e/localcluster/stages.yaml"

log "building $IMAGE"
"$DOCKER" build \
    --build-arg "REVISION=$(git rev-parse HEAD 2> /dev/null || echo unknown)" \
    -t "$IMAGE" "$ROOT"

log "loading $IMAGE into the nodes"
"$KIND" load docker-image "$IMAGE" --name "$CLUSTER_NAME"

log "installing charts/kopf-scheduler as release $RELEASE"
# The chart leaves the namespace to the admin: label it like manifests/base/namespace.yaml, so
# admission holds the scheduler's pods to the restricted Pod Security level.
"$KUBECTL" create namespace "$NAMESPACE" --dry-run=client -o yaml | "$KUBECTL" apply -f -
"$KUBECTL" label --overwrite namespace "$NAMESPACE" \
    pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted
"$HELM" upgrade --install "$RELEASE" "$ROOT/charts/kopf-scheduler" \
    --namespace "$NAMESPACE" --values "$ROOT/e2e/kind/values.yaml" --wait --timeout 180s
"$KUBECTL" -n "$NAMESPACE" rollout status deployment/kopf-scheduler --timeout=180s

log "waiting for a replica to hold the Lease $NAMESPACE/kopf-scheduler"
holder=""
for _ in $(seq 60); do
    holder="$("$KUBECTL" -n "$NAMESPACE" get lease kopf-scheduler \
        -o jsonpath='{.spec.holderIdentity}' 2> /dev/null || true)"
    [[ -n "$holder" ]] && break
    sleep 2
done
if [[ -z "$holder" ]]; then
    echo "error: no replica took the Lease within 120 s" >&2
    exit 1
fi
log "leader: $holder"

log "running the end-to-end suite"
E2E_CLUSTER=kind "$PYTHON" -m pytest e2e "$@"
