"""Objects of a chart that need its pods to run code, found from its rendering before anything
is installed.

On the embedded cluster pods are scheduled and marked Running and Ready, but no container ever
runs (kwok): an admission webhook or an APIService served by the chart's own pods is never
answered, and a Helm hook's Job or Pod never does its work. `needing_code` finds them in a
rendering (hooks included), generically:

- a ValidatingWebhookConfiguration or MutatingWebhookConfiguration with a webhook whose
  `clientConfig.service` is a Service of the chart that selects the chart's own pods (a pod
  template's labels hold its selector); fail-closed (`failurePolicy: Fail`, the API's default)
  it refuses every request it matches, fail-open it delays each by its timeout;
- an APIService whose `spec.service` is such a Service: its API group is never served;
- a Job or Pod that is a Helm hook of an install, upgrade, rollback or delete (test hooks are
  never run by the toolkit).

Each is one line naming the object; the toolkit never guesses the chart's values that would
disable it. Three can be stood in for safely by a switch of the helm or flux arm (`Need.switch`
names it): a fail-closed webhook configuration (`dropUnservedWebhooks`) and an APIService
(`dropUnservedAPIServices`), each removed from the install and the desired state - nothing
the chart's pods serve is then asked for - and a hook, never run (`Need.hook`; `disableHooks`:
Helm's own `--no-hooks`, a hook is never part of the release's desired state anyway).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compare.judge.kinds import pod_template
from compare.target import DROP_API_SERVICES, DROP_WEBHOOKS

WEBHOOK_CONFIGURATIONS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
HOOK = "helm.sh/hook"
# Helm's hooks the toolkit never runs (`helm test`).
TEST_HOOKS = frozenset({"test", "test-success", "test-failure"})
REMEDY = "needs its pods to run code: use a real cluster (--kubeconfig) or values that disable it"
# Why what each switch leaves out harms nothing (the preflight's line).
LEFT_OUT = {
    DROP_WEBHOOKS: "its webhooks are never called",
    DROP_API_SERVICES: "its API group is not registered, so the cluster's discovery stays whole",
}


@dataclass(frozen=True)
class Need:
    """An object of the chart that needs its pods to run code: what it is, why, the chart
    arm's key that removes it on the embedded cluster (`switch`: a fail-closed webhook
    configuration, an APIService), and whether it is a Helm hook (never run with
    `disableHooks`)."""

    kind: str
    name: str
    why: str
    switch: str | None = None
    hook: bool = False

    @property
    def removable(self) -> bool:
        return self.switch is not None

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def document(self) -> str:
        """`Kind/name`, as the post-render filters name what they leave out."""
        return f"{self.kind}/{self.name}"

    def line(self) -> str:
        return f"{self.ref}: {self.why}: {REMEDY}"


def left_out(
    objects: Sequence[Mapping[str, Any]], namespace: str, drops: Sequence[str]
) -> list[str]:
    """`Kind/name` of what of a chart's rendering the arm's switches `drops` leave out
    (`HelmInstall.drops`)."""
    if not drops:
        return []
    return [need.document for need in needing_code(objects, namespace) if need.switch in drops]


def needing_code(objects: Sequence[Mapping[str, Any]], namespace: str) -> list[Need]:
    """What of a chart's rendering (hooks included) in `namespace` needs its pods to run code
    (see the module's docstring), in the rendering's order."""
    served = _served_services(objects, namespace)
    found: list[Need] = []
    for obj in objects:
        kind, meta = str(obj.get("kind")), obj.get("metadata") or {}
        name = str(meta.get("name"))
        if kind in WEBHOOK_CONFIGURATIONS:
            need = _webhooks(kind, name, obj, served, namespace)
        elif kind == "APIService":
            need = _api_service(name, obj, served, namespace)
        elif kind in ("Job", "Pod"):
            need = _hook(kind, name, meta)
        else:
            need = None
        if need is not None:
            found.append(need)
    return found


def _key(service: Mapping[str, Any], namespace: str) -> tuple[str, str]:
    return (str(service.get("namespace") or namespace), str(service.get("name")))


def _served_services(
    objects: Sequence[Mapping[str, Any]], namespace: str
) -> dict[tuple[str, str], str]:
    """(namespace, name) of each Service of the chart that selects its own pods -> the object
    whose pods it selects (`Deployment web`)."""
    templates = []
    for obj in objects:
        template = pod_template(obj)
        labels = ((template or {}).get("metadata") or {}).get("labels") or {}
        if labels and HOOK not in ((obj.get("metadata") or {}).get("annotations") or {}):
            meta = obj.get("metadata") or {}
            templates.append((f"{obj.get('kind')} {meta.get('name')}", meta, labels))
    served: dict[tuple[str, str], str] = {}
    for obj in objects:
        if obj.get("kind") != "Service":
            continue
        meta = obj.get("metadata") or {}
        selector = (obj.get("spec") or {}).get("selector") or {}
        if not selector:
            continue  # endpoints of its own: not the chart's pods
        for what, pod_meta, labels in templates:
            same_namespace = (pod_meta.get("namespace") or namespace) == (
                meta.get("namespace") or namespace
            )
            if same_namespace and all(labels.get(k) == v for k, v in selector.items()):
                served[_key(meta, namespace)] = what
                break
    return served


def _webhooks(
    kind: str,
    name: str,
    obj: Mapping[str, Any],
    served: Mapping[tuple[str, str], str],
    namespace: str,
) -> Need | None:
    mine = []  # (webhook, its Service's key, fail-closed)
    for hook in obj.get("webhooks") or []:
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, Mapping) and _key(service, namespace) in served:
            # admissionregistration.k8s.io/v1 defaults failurePolicy to Fail.
            closed = hook.get("failurePolicy", "Fail") == "Fail"
            mine.append((str(hook.get("name")), _key(service, namespace), closed))
    if not mine:
        return None
    hook_name, key, closed = next((m for m in mine if m[2]), mine[0])
    policy = "fail-closed: it refuses every request it matches" if closed else "fail-open"
    more = f" (and {len(mine) - 1} more)" if len(mine) > 1 else ""
    why = (
        f"webhook {hook_name}{more} is served by Service {key[1]}, which selects the chart's"
        f" {served[key]} ({policy})"
    )
    return Need(kind, name, why, switch=DROP_WEBHOOKS if any(m[2] for m in mine) else None)


def _api_service(
    name: str, obj: Mapping[str, Any], served: Mapping[tuple[str, str], str], namespace: str
) -> Need | None:
    service = (obj.get("spec") or {}).get("service")
    if not isinstance(service, Mapping) or _key(service, namespace) not in served:
        return None
    key = _key(service, namespace)
    return Need(
        "APIService",
        name,
        f"its API is served by Service {key[1]}, which selects the chart's {served[key]}",
        switch=DROP_API_SERVICES,
    )


def _hook(kind: str, name: str, meta: Mapping[str, Any]) -> Need | None:
    phases = [p.strip() for p in str((meta.get("annotations") or {}).get(HOOK, "")).split(",") if p]
    run = [p for p in phases if p and p not in TEST_HOOKS]
    if not run:
        return None
    return Need(kind, name, f"a Helm {', '.join(run)} hook", hook=True)
