"""A minimal external provisioner for the volume scenarios (ours, not kubernetes-csi's).

It follows the part of the selected-node protocol that scheduling depends on, the way
kubernetes-csi/external-provisioner does for a ``WaitForFirstConsumer`` class:

1. the scheduler's PreBind writes ``volume.kubernetes.io/selected-node`` on the claim;
2. the PV controller sees a claim of a class whose provisioner is not in-tree and marks it with
   ``volume.kubernetes.io/storage-provisioner: <provisioner>``;
3. this provisioner, watching the claims of one namespace, takes each unbound claim that
   carries both annotations, whose class names it, and creates the PV ``pvc-<claim uid>``:
   the claim's size, access modes, volume mode and class, the class's reclaim policy, a CSI
   source of the provisioner's name, node affinity to the selected node's hostname and a
   ``claimRef`` with the claim's uid;
4. the PV controller binds the claim to that PV, and the scheduler's PreBind, which waits for
   exactly that, lets the pod be bound.

Everything else a real provisioner does (capacity, topology keys from CSINode, provisioning
failures that remove the selected node, ``Immediate`` classes, deleting released volumes) is
left out. The PVs it created are deleted when it stops.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping
from typing import Any

from .kubectl import Kubectl, KubectlError
from .volumes import (
    BETA_STORAGE_PROVISIONER,
    CLAIM_KIND,
    HOSTNAME_LABEL,
    PROVISIONED_BY,
    SELECTED_NODE,
    STORAGE_PROVISIONER,
    annotations_of,
    node_affinity,
)

PROVISIONER_NAME = "e2e-provisioner.kopf-scheduler.io"


class Provisioner:
    """Provisions the claims of one namespace that name it, until :meth:`stop`."""

    def __init__(self, kubectl: Kubectl, namespace: str, name: str = PROVISIONER_NAME) -> None:
        self.kubectl = kubectl
        self.namespace = namespace
        self.name = name
        self.created: dict[str, str] = {}  # claim name -> PV name
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            kubectl.command(
                "get",
                "persistentvolumeclaims",
                "-n",
                namespace,
                "--watch",
                "--output-watch-events",
                "-o",
                "json",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._thread = threading.Thread(
            target=self._run, name=f"provisioner-{namespace}", daemon=True
        )
        self._thread.start()

    # -- the watch ---------------------------------------------------------------------------

    def _run(self) -> None:
        decoder = json.JSONDecoder()
        buffer = ""
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            buffer += line
            while buffer.strip():
                try:
                    item, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break
                buffer = buffer.lstrip()[end:]
                claim = item.get("object")
                if item.get("type") != "DELETED" and isinstance(claim, Mapping):
                    self._handle(claim)

    def _handle(self, claim: Mapping[str, Any]) -> None:
        try:
            if self._should_provision(claim):
                self._provision(claim)
        except KubectlError as error:
            with self._lock:
                self.errors.append(str(error))

    def _should_provision(self, claim: Mapping[str, Any]) -> bool:
        if claim.get("kind") != CLAIM_KIND or (claim.get("spec") or {}).get("volumeName"):
            return False
        if claim["metadata"]["name"] in self.created:
            return False
        marks = annotations_of(claim)
        named = marks.get(STORAGE_PROVISIONER) or marks.get(BETA_STORAGE_PROVISIONER)
        if named != self.name or not marks.get(SELECTED_NODE):
            return False
        class_name = (claim.get("spec") or {}).get("storageClassName")
        storage_class = self.kubectl.get("storageclass", class_name) if class_name else None
        return storage_class is not None and storage_class.get("provisioner") == self.name

    def _provision(self, claim: Mapping[str, Any]) -> None:
        metadata = claim["metadata"]
        spec = claim["spec"]
        node_name = annotations_of(claim)[SELECTED_NODE]
        node = self.kubectl.get("node", node_name)
        if node is None:
            raise KubectlError(["get", "node", node_name], 1, "selected node not found")
        hostname = (node["metadata"].get("labels") or {}).get(HOSTNAME_LABEL, node_name)
        storage_class = self.kubectl.get("storageclass", spec["storageClassName"]) or {}
        volume_name = f"pvc-{metadata['uid']}"
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume_name, "annotations": {PROVISIONED_BY: self.name}},
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": list(spec["accessModes"]),
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "storageClassName": spec["storageClassName"],
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
                "csi": {"driver": self.name, "volumeHandle": volume_name},
                "nodeAffinity": node_affinity(hostname),
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": CLAIM_KIND,
                    "namespace": metadata["namespace"],
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                },
            },
        }
        try:
            self.kubectl.create(volume)
        except KubectlError as error:
            if "AlreadyExists" not in error.stderr and "already exists" not in error.stderr:
                raise
        self.created[metadata["name"]] = volume_name

    # -- teardown ----------------------------------------------------------------------------

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._thread.join(10)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        if self.created:
            self.kubectl.run(
                "delete",
                "persistentvolumes",
                *self.created.values(),
                "--wait=false",
                "--ignore-not-found",
                check=False,
            )
