"""The `compare status` row of an operator's custom resource (`target_operator_app`): the
operator approach's `target_row`, for a target file's arm and for every WebApp `compare status`
finds, judged closed-world (`compare.judge`) against the built-in chart's rendering of a WebApp
or an operator's baseline.
"""

from __future__ import annotations

from compare.approaches.operator import baseline
from compare.approaches.operator.arm import webapp_desired
from compare.cluster import ClusterTarget
from compare.deploy.rows import DeployedApp, judged_row, unjudged
from compare.kube import served as custom
from compare.target import Operator, Target


def target_operator_app(
    cluster: ClusterTarget, target: Target, operator: Operator, namespace: str
) -> DeployedApp | None:
    """The row of an operator arm's custom resource (its first; None when it is not there), judged
    closed-world against the baseline its deploy stored (`baseline`), or - the toolkit's operator -
    against the built-in chart's rendering of its WebApps (a WebApp named by name alone,
    `webapp_named`, is one whose spec did not validate)."""
    body = operator.resources[0]
    with cluster.api_client() as api:
        served = custom.served(api, str(body["apiVersion"]), str(body["kind"]))
        name = str(body["metadata"]["name"])
        live = custom.read(api, served, namespace, name) if served is not None else None
        if live is None:
            return None
        status = live.get("status") or {}
        if operator.toolkit:
            # Named and described as the WebApp it is (its phase).
            shown, detail = name, f"phase {status.get('phase') or 'unknown'}"
            if not operator.webapps:
                spec = live.get("spec") or {}
                return unjudged(
                    "operator",
                    shown,
                    namespace,
                    detail,
                    "invalid spec",
                    replicas=spec.get("replicas"),
                    image=spec.get("image"),
                )
            desired = webapp_desired(api, operator, namespace)
        else:
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            ready = operator.ready_condition
            detail = f"{ready} {conditions.get(ready, 'absent')}" if ready else "ready: children"
            objects = baseline.load(api, namespace, target.name)
            shown = f"{body['kind']}/{name}"
            if objects is None:
                return unjudged(
                    "operator",
                    shown,
                    namespace,
                    detail,
                    "no baseline (compare deploy operator --target FILE takes it)",
                )
            desired = baseline.desired_of(objects)
        return judged_row(
            api,
            approach="operator",
            name=shown,
            namespace=namespace,
            detail=detail,
            desired=desired,
        )
