"""``kopf-scheduler explain NAMESPACE/NAME``: render the decision record stored on a pod."""

from __future__ import annotations

import json
import sys

from kopf_scheduler.k8s.client import make_api
from kopf_scheduler.ports import ApiError, NotFoundError
from kopf_scheduler.service.explanations import ANNOTATION
from kopf_scheduler.sim.report import render_explanations


async def explain(pod: str, kubeconfig: str | None, output: str) -> int:
    if "/" not in pod:
        print("error: give the pod as NAMESPACE/NAME", file=sys.stderr)
        return 2
    namespace, name = pod.split("/", 1)
    api = await make_api(kubeconfig)
    try:
        raw = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    except NotFoundError:
        print(f"error: pod {pod} not found", file=sys.stderr)
        return 1
    except ApiError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        await api.close()
    annotations = (raw.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ANNOTATION)
    status = raw.get("status") or {}
    if not text:
        node = (raw.get("spec") or {}).get("nodeName")
        where = f"bound to {node}" if node else "pending"
        print(
            f"{pod} is {where}; no decision record is stored on it "
            "(records are kept for failed attempts and preemptions by default)."
        )
        return 0
    record = json.loads(text)
    if output == "json":
        print(json.dumps(record, indent=2))
        return 0
    print("\n".join(render_explanations([record])))
    if record.get("truncatedNodes"):
        print(f"  ({record['truncatedNodes']} more nodes not stored)")
    nominated = status.get("nominatedNodeName")
    if nominated:
        print(f"  currently nominated to {nominated}")
    return 0
