"""Any operator as the app under test: a target file's operator arm installed, applied, judged.

  install       the operator: `kubectl kustomize DIR` server-side applied (each object in its
                own namespace, else the install's: `placement`), a chart as a Helm release,
                - `process` - its manifests applied and its command run as a local process
                (`target_process`), - `alreadyInstalled` - nothing, only checked, or
                - `toolkit` - the toolkit's own operator (`controllers`), shared, never removed
  check         every custom resource's kind is served (its CRD established), or defined by a
                CRD of the install: else one line naming the resource, before anything is applied;
                an install that runs pods is refused on the embedded cluster (`incluster`)
  deploy        the custom resources applied in a namespace, ready (the named status condition
                True for the current generation, or every owned object ready), then the
                baseline (`baseline`) snapshotted once it holds, and stored;
                the toolkit's WebApps: Available, then held to the built-in chart's
                rendering of each (`compare.approaches.operator.reference`) instead of a baseline
  remove        the custom resources deleted (their finalizers run) and gone; the install is
                removed only when asked and no resource of its kinds is left in the cluster

Everything that can be checked without a cluster (the target file, the kustomize build, the
chart's rendering) is checked first; what a failed deploy created is removed again by the
caller's `Rollback`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from compare import kube
from compare.approaches.operator import baseline, incluster, managers, placement
from compare.approaches.operator.controllers import (
    WEBAPPS,
    apply_webapp,
    install_operator,
    operator_status,
    start_operator,
)
from compare.approaches.operator.reference import operator_reference
from compare.approaches.operator.target_process import TargetProcess
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import install_target, render_target, uninstall_target
from compare.deploy.charts import get_release
from compare.deploy.install import run_tool
from compare.deploy.live import wait_for_desired_state
from compare.errors import EXIT_FAILED, CompareError
from compare.inputfile import parse_yaml_all
from compare.judge import DesiredObjects, with_api_defaults
from compare.judge.kinds import kind as judge_kind
from compare.judge.rollout import reported_problem
from compare.kube import Deadline, Served, wait_for, wait_until_gone
from compare.kube import served as api_of
from compare.kube.apierror import delete_if_found
from compare.target import Operator, Target
from compare.webapp import KIND, to_cr

FIELD_MANAGER = "compare-target"
POLL_S = 0.25
# The toolkit's operator reacts within milliseconds: its WebApps are looked at more often.
WEBAPP_POLL_S = 0.1
# How long a CRD the install just applied may take to be served.
ESTABLISH_TIMEOUT_S = 30.0
# The baseline's two snapshots are this far apart at least: an operator that settles in steps
# (a second write a moment after the first) must not be snapshotted half-way.
QUIET_S = 1.0
REMOVE_TIMEOUT_S = 60.0
# A custom resource whose status nothing has written this long after it was applied is
# reconciled by no operator: the wait ends there, with that diagnosis, not at its deadline.
# Every operator seen writes a status within a second or two of its first reconcile.
NO_RECONCILE_S = 15.0


@dataclass(frozen=True)
class Resource:
    """One custom resource of the target, as the API server serves its kind."""

    body: Mapping[str, Any]
    served: Served

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    def describe(self, namespace: str) -> str:
        return f"{self.served.kind} {namespace}/{self.name}"

    def in_namespace(self, namespace: str) -> dict[str, Any]:
        meta = {**self.body["metadata"], "namespace": namespace}
        return {**self.body, "metadata": meta}


@dataclass
class Install:
    """The operator's install: what it is made of, and what this process created of it."""

    form: str
    namespace: str
    documents: list[dict[str, Any]] = field(default_factory=list)
    existed: bool = True
    created: list[dict[str, Any]] = field(default_factory=list)
    # The install's namespace was created for it (by a run's preflight): removed with it.
    namespace_created: bool = False
    # `process`: this install started its process (one running already is left running).
    started: bool = False


# -- before the cluster ------------------------------------------------------------------------


def kustomize_build(target: Target, operator: Operator) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR`: the install's objects (no cluster), in the kustomization's
    order (`plan_install` orders them as applied); one line if it fails."""
    directory = operator.install.kustomize
    assert directory is not None
    try:
        text = run_tool("kubectl", "kustomize", str(directory))
        docs = [doc for doc in parse_yaml_all(text, f"kubectl kustomize {directory}") if doc]
    except CompareError as exc:
        raise CompareError(f"{target.source}: operator.install.kustomize: {exc.message}") from None
    return docs


def install_documents(target: Target, operator: Operator, namespace: str) -> list[dict[str, Any]]:
    """The objects the install applies (kustomize build, or the chart rendered); none when
    it is already installed. Checked before the cluster is touched."""
    if operator.install.form == "kustomize":
        return kustomize_build(target, operator)
    if operator.install.form == "chart":
        assert operator.install.chart is not None
        chart_ns = operator.install.chart.namespace or namespace
        return render_target(target, operator.install.chart, chart_ns)
    if operator.install.process is not None:
        return [dict(doc) for doc in operator.install.process.manifests]
    return []


def _defined_kinds(documents: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], bool]:
    """(apiVersion, kind) -> namespaced, for every served version of the install's CRDs."""
    found = {}
    for doc in documents:
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc.get("spec") or {}
        kind_name = str((spec.get("names") or {}).get("kind"))
        for version in spec.get("versions") or []:
            if version.get("served", True):
                key = (f"{spec.get('group')}/{version.get('name')}", kind_name)
                found[key] = spec.get("scope", "Namespaced") == "Namespaced"
    return found


def served_resources(
    api: client.ApiClient, target: Target, operator: Operator, *, timeout: float
) -> list[Resource]:
    """The resources once every kind is served (an install's CRD just applied gets a while
    to be established)."""

    def look() -> tuple[list[Resource], str | None]:
        resources: list[Resource] = []
        for body in operator.resources:
            what = api_of.served(api, str(body["apiVersion"]), str(body["kind"]))
            if what is None:
                return [], f"{body['kind']} ({body['apiVersion']})"
            resources.append(Resource(body, what))
        return resources, None

    resources, _ = wait_for(
        look,
        deadline=timeout,
        done=lambda look: look[1] is None,
        timed_out=lambda look: CompareError(
            f"{target.source}: operator.install: {look[1]} is not served {timeout:.0f}s"
            " after the install (its CRD is not established)",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
    )
    return resources


# -- the install -------------------------------------------------------------------------------


def check_served(
    cluster: ClusterTarget, target: Target, operator: Operator, namespace: str
) -> None:
    """Before anything is applied: every custom resource is of a namespaced kind the API
    server serves, or one a CRD of the install (rendered here, no cluster) defines: else one
    line naming the resource (exit 2). An install whose objects run pods is refused on the
    embedded cluster first, where they would never run (`incluster`)."""
    if operator.toolkit:
        return  # WebApps, checked when loaded; its install defines their kind
    documents = install_documents(target, operator, namespace)
    incluster.check_runs_here(cluster, target, operator, documents)
    defined = _defined_kinds(documents)
    with cluster.api_client() as api:
        for body in operator.resources:
            api_version, kind_name = str(body["apiVersion"]), str(body["kind"])
            what = f"{target.source}: operator.resources: {kind_name} {body['metadata']['name']}"
            served = api_of.served(api, api_version, kind_name)
            namespaced = (
                served.namespaced if served is not None else defined.get((api_version, kind_name))
            )
            if namespaced is None:
                raise CompareError(
                    f"{what}: no API serves {kind_name} in {api_version} (no established CRD"
                    " defines it, and the install does not)"
                )
            if not namespaced:
                raise CompareError(
                    f"{what}: {kind_name} is cluster-scoped (only namespaced custom resources"
                    " are judged)"
                )


def plan_install(
    cluster: ClusterTarget, target: Target, operator: Operator, namespace: str
) -> Install:
    """What installing the operator would create (read before anything is applied), so a
    failed deploy removes exactly that."""
    form = operator.install.form
    if form in ("alreadyInstalled", "toolkit"):
        return Install(form, namespace)
    if form == "chart":
        chart = operator.install.chart
        assert chart is not None
        chart_ns = chart.namespace or namespace
        return Install(
            form, chart_ns, existed=get_release(cluster, chart_ns, chart.release) is not None
        )
    # Ordered as applied (namespaces and CRDs first); each object looked for in its own
    # namespace, else the install's (`placement`).
    docs = placement.ordered(install_documents(target, operator, namespace))
    found = placement.present(cluster, docs, namespace)
    created = [doc for doc, there in zip(docs, found, strict=True) if not there]
    return Install(form, namespace, docs, existed=not created, created=created)


def install(
    cluster: ClusterTarget, target: Target, operator: Operator, plan: Install, *, timeout: float
) -> None:
    """Install the operator as planned (kustomize or chart; `toolkit`: installed and started
    unless it runs already; `process`: its manifests applied, its CRDs established, then its
    command started unless it runs already); `alreadyInstalled`: nothing."""
    if plan.form == "toolkit":
        install_operator(cluster)
    elif plan.form == "process":
        assert operator.install.process is not None
        at = f"{target.source}: operator.install.process"
        try:
            # Namespaces and CRDs first (the CRDs established), each object in its own place.
            placement.apply_ordered(
                cluster, plan.documents, field_manager=FIELD_MANAGER, namespace=plan.namespace
            )
        except CompareError as exc:
            raise CompareError(f"{at}.crds: {exc.message}", exit_code=EXIT_FAILED) from None
        process = TargetProcess(target.name, operator.install.process)
        plan.started = not process.status(cluster).running
        process.install(cluster)
    elif plan.form == "chart":
        assert operator.install.chart is not None
        install_target(cluster, target, operator.install.chart, plan.namespace, timeout=timeout)
    elif plan.form == "kustomize":
        try:
            placement.apply_ordered(
                cluster, plan.documents, field_manager=FIELD_MANAGER, namespace=plan.namespace
            )
        except CompareError as exc:
            raise CompareError(
                f"{target.source}: operator.install.kustomize: {exc.message}",
                exit_code=EXIT_FAILED,
            ) from None


def _delete_documents(cluster: ClusterTarget, namespace: str, docs: Sequence[Any]) -> None:
    with cluster.api_client() as api:
        api_of.delete_all(api, docs, timeout=REMOVE_TIMEOUT_S, namespace=namespace)


def uninstall(
    cluster: ClusterTarget, target: Target, operator: Operator, done: Install, *, created_only: bool
) -> None:
    """Remove the install: what this process created of it (`created_only`, a rollback), or
    all of it (`compare undeploy operator --target`). `alreadyInstalled` is never touched,
    nor is the toolkit's operator: every WebApp of the cluster shares it."""
    if done.form in ("alreadyInstalled", "toolkit"):
        return
    if done.form == "process":
        # The process first: it must not see its kinds' resources go with their CRDs.
        assert operator.install.process is not None
        if done.started or not created_only:
            TargetProcess(target.name, operator.install.process).uninstall(cluster)
    if done.form == "chart":
        chart = operator.install.chart
        assert chart is not None
        if not created_only or not done.existed:
            uninstall_target(cluster, chart, done.namespace, timeout=REMOVE_TIMEOUT_S)
        return
    # Reverse order: what is applied first (namespaces, CRDs: `placement.ordered`) goes last.
    docs = done.created if created_only else done.documents
    _delete_documents(cluster, done.namespace, list(reversed(docs)))
    if created_only and done.namespace_created:
        created = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": done.namespace}}
        _delete_documents(cluster, done.namespace, [created])


# -- the custom resources ----------------------------------------------------------------------


def apply_resources(
    api: client.ApiClient, target: Target, resources: Sequence[Resource], namespace: str
) -> list[dict[str, Any]]:
    """Server-side apply each custom resource; a rejection is one line naming it."""
    applied = []
    for resource in resources:
        try:
            applied.append(
                api_of.apply(api, resource.served, namespace, resource.in_namespace(namespace))
            )
        except client.ApiException as exc:
            raise CompareError(
                f"{target.source}: operator.resources: {resource.describe(namespace)} rejected:"
                f" {api_of.api_message(exc)}",
                exit_code=EXIT_FAILED,
            ) from None
    return applied


def _condition(body: Mapping[str, Any], condition: str) -> str | None:
    """Why the condition does not hold yet (None: True, for the current generation)."""
    status = body.get("status") or {}
    generation = (body.get("metadata") or {}).get("generation")
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    found = next((c for c in conditions if c.get("type") == condition), None)
    if found is None:
        others = sorted({str(c.get("type")) for c in conditions if c.get("type")})
        if others:
            return f"no {condition} condition (its conditions: {', '.join(others)})"
        return f"no {condition} condition yet"
    observed = found.get("observedGeneration", status.get("observedGeneration"))
    if observed is not None and generation is not None and observed < generation:
        return f"{condition} is for generation {observed}, not {generation}"
    if found.get("status") != "True":
        reason = f" ({found.get('reason')})" if found.get("reason") else ""
        return f"{condition} is {found.get('status')}{reason}"
    return None


def not_ready(
    api: client.ApiClient,
    resources: Sequence[Resource],
    operator: Operator,
    namespace: str,
    read: Sequence[dict[str, Any] | None],
) -> str | None:
    """Why the resources are not ready yet (None: they are), from their bodies as `read`."""
    bodies = []
    for resource, body in zip(resources, read, strict=True):
        if body is None:
            return f"{resource.describe(namespace)} is gone"
        bodies.append(body)
        if operator.ready_condition is not None:
            why = _condition(body, operator.ready_condition)
            if why is not None:
                return f"{resource.describe(namespace)}: {why}"
    if operator.ready_condition is not None:
        return None
    owned = baseline.owned_objects(api, namespace, bodies)
    if not owned:
        return "it owns no object yet"
    return next((why for obj in owned if (why := reported_problem(obj)) is not None), None)


def status_written(body: Mapping[str, Any]) -> bool:
    """Whether anyone ever wrote the resource's status: a condition or an observedGeneration
    there, or a write of the status subresource in its managed fields."""
    status = body.get("status") or {}
    if status.get("conditions") or status.get("observedGeneration") is not None:
        return True
    managed = (body.get("metadata") or {}).get("managedFields") or []
    return any(entry.get("subresource") == "status" for entry in managed)


def unreconciled(
    resources: Sequence[Resource], read: Sequence[dict[str, Any] | None]
) -> Resource | None:
    """The first resource whose status no one has written (None: every one's was), from
    their bodies as `read`."""
    for resource, body in zip(resources, read, strict=True):
        if body is not None and not status_written(body):
            return resource
    return None


def wait_ready(
    api: client.ApiClient,
    resources: Sequence[Resource],
    operator: Operator,
    namespace: str,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    interval: float = POLL_S,
    no_reconcile: float | None = None,
) -> list[dict[str, Any]]:
    """Until ready; the live resources then. Past `timeout`: one line saying what is missing.
    With `no_reconcile`, a resource whose status nobody has written that many seconds after
    the wait began ends it at once: no operator reconciles it."""
    silent = Deadline(no_reconcile or 0.0)

    def look() -> str | None:
        # Each resource read once per look: readiness and, later, who wrote its status.
        read = [api_of.read(api, r.served, namespace, r.name) for r in resources]
        why = not_ready(api, resources, operator, namespace, read)
        if why is not None and no_reconcile is not None and silent.passed():
            found = unreconciled(resources, read)
            if found is not None:
                raise CompareError(
                    f"no operator is reconciling {found.served.kind} {namespace}/{found.name}"
                    f" (last write to its status: never; waited {no_reconcile:.0f}s)",
                    exit_code=EXIT_FAILED,
                )
        return why

    wait_for(
        look,
        deadline=timeout,
        done=lambda why: why is None,
        timed_out=lambda why: CompareError(
            f"not ready within {timeout:.0f}s: {why}", exit_code=EXIT_FAILED
        ),
        interval=interval,
        cancel=cancel,
        what=", ".join(r.describe(namespace) for r in resources),
    )
    return [api_of.read(api, r.served, namespace, r.name) or {} for r in resources]


def take_baseline(
    api: client.ApiClient,
    target: Target,
    owners: Sequence[Mapping[str, Any]],
    namespace: str,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    warn: Callable[[str], None] | None = None,
    known_managers: Sequence[str] = (),
    reclaim: bool = False,
) -> DesiredObjects:
    """Snapshot the owned objects, wait until that state holds (rollouts complete) and a quiet
    period has passed, snapshot again: once two agree, the operator is done and that is the
    baseline (stored). A field of it that another field manager than the operator's owns
    (`managers`; `known_managers` are the operator's too) is a `warn`ing (a label or
    annotation) or a refusal (content) - unless `reclaim`: then each object holding such
    content is deleted once, the operator must re-create it (a new uid), and the baseline is
    taken again from what it wrote."""
    deadline = Deadline(timeout)
    reclaimed = False
    raw = baseline.owned_objects(api, namespace, owners)
    objects = [baseline.cleaned(obj) for obj in raw]
    quiet_from = Deadline(QUIET_S)
    while True:
        if not objects:
            raise CompareError(
                f"{target.source}: operator: the custom resources own no object the judge"
                " knows (nothing to hold the operator to)",
                exit_code=EXIT_FAILED,
            )
        desired = baseline.desired_of(objects)
        wait_for_desired_state(
            api,
            namespace,
            desired,
            timeout=deadline.remaining(1.0),
            what=f"operator target {target.name}",
            cancel=cancel,
        )
        if not quiet_from.passed():
            kube.wait.sleep_unless_cancelled(
                cancel, quiet_from.remaining(), f"operator target {target.name}"
            )
        raw = baseline.owned_objects(api, namespace, owners)
        again = [baseline.cleaned(obj) for obj in raw]
        if again == objects:
            # Whose fields these are: another manager's change is reported, and where the
            # baseline would hold the operator to content it never wrote, refused.
            found = managers.foreign_fields(
                raw,
                owners,
                controller_annotations=baseline.CONTROLLER_ANNOTATIONS,
                controller_prefixes=baseline.CONTROLLER_ANNOTATION_PREFIXES,
                known=known_managers,
            )
            warnings, refusal = managers.verdict(found)
            if refusal is not None and reclaim and not reclaimed:
                reclaimed = True
                for line in _reclaim(
                    api, namespace, owners, raw, found, deadline=deadline, cancel=cancel
                ):
                    if warn is not None:
                        warn(f"baseline of {target.name} in {namespace}: {line}")
                raw = baseline.owned_objects(api, namespace, owners)
                objects, quiet_from = [baseline.cleaned(obj) for obj in raw], Deadline(QUIET_S)
                continue
            if refusal is not None:
                raise CompareError(f"{target.source}: operator: {refusal}", exit_code=EXIT_FAILED)
            for line in warnings:
                if warn is not None:
                    warn(f"warning: baseline of {target.name} in {namespace}: {line}")
            baseline.save(api, namespace, target.name, owners, objects)
            return desired
        objects, quiet_from = again, Deadline(QUIET_S)


def _uids(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """Each object's uid by its kind and name."""
    return {
        (str(o.get("kind")), str((o.get("metadata") or {}).get("name"))): managers.uid(o)
        for o in objects
    }


def _reclaim(
    api: client.ApiClient,
    namespace: str,
    owners: Sequence[Mapping[str, Any]],
    raw: Sequence[Mapping[str, Any]],
    found: Sequence[managers.ForeignField],
    *,
    deadline: Deadline,
    cancel: threading.Event | None,
) -> list[str]:
    """Delete each owned object whose content another manager owns and wait until the
    operator has made it again (same kind and name, a new uid): only a write of its own then
    holds those fields. What was done, one line per object."""
    holding = sorted({(f.kind, f.name) for f in found if f.content})
    before = _uids(raw)
    for kind_name, name in holding:
        row = judge_kind(kind_name)
        delete = row.call(api, "delete")
        args = (name, namespace) if row.namespaced else (name,)
        delete_if_found(f"{kind_name} {name}", delete, *args)

    def missing() -> list[str]:
        now = _uids(baseline.owned_objects(api, namespace, owners))
        return [f"{k} {n}" for k, n in holding if now.get((k, n)) in (None, before.get((k, n)))]

    wait_for(
        missing,
        deadline=deadline,
        done=lambda left: not left,
        timed_out=lambda left: CompareError(
            f"operator.reclaimForeign: the operator did not re-create {', '.join(left)} in"
            f" {namespace} after the toolkit deleted it (its content was another field"
            " manager's): the operator does not create that object, so its baseline cannot"
            " be proved",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
        cancel=cancel,
        what="the operator re-creating what was reclaimed",
    )
    return [
        f"{k} {n} held another field manager's content: deleted, and re-created by the operator"
        for k, n in holding
    ]


def deploy_resources(
    cluster: ClusterTarget,
    target: Target,
    operator: Operator,
    namespace: str,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    warn: Callable[[str], None] | None = None,
) -> DesiredObjects:
    """Apply the custom resources in `namespace` (which exists), wait until ready, take and
    store the baseline; returns it as the judge's desired objects. `warn` gets what the
    baseline keeps of other field managers' writes (default: nothing does)."""
    deadline = Deadline(timeout)
    with cluster.api_client() as api:
        if operator.toolkit:
            return deploy_webapps(api, operator, namespace, timeout=timeout, cancel=cancel)
        resources = served_resources(api, target, operator, timeout=ESTABLISH_TIMEOUT_S)
        apply_resources(api, target, resources, namespace)
        # The toolkit's own operator is known to run; any other may not be running at all.
        owners = wait_ready(
            api, resources, operator, namespace, timeout=timeout, cancel=cancel,
            no_reconcile=NO_RECONCILE_S,
        )  # fmt: skip
        return take_baseline(
            api,
            target,
            owners,
            namespace,
            timeout=deadline.remaining(1.0),
            cancel=cancel,
            warn=warn,
            known_managers=operator.field_managers,
            reclaim=operator.reclaim_foreign,
        )


def webapp_desired(api: client.ApiClient, operator: Operator, namespace: str) -> DesiredObjects:
    """The toolkit operator's desired state: the built-in chart's rendering of each WebApp
    (an independent reference, never the operator's own builders), with the API's defaults."""
    objects = [obj for webapp in operator.webapps for obj in operator_reference(webapp, namespace)]
    return with_api_defaults(api, namespace, objects)


def deploy_webapps(
    api: client.ApiClient,
    operator: Operator,
    namespace: str,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
) -> DesiredObjects:
    """Apply the toolkit operator's WebApps, wait until each is Available for its current
    generation and the live objects hold the built-in chart's rendering of it."""
    deadline = Deadline(timeout)
    for webapp in operator.webapps:
        apply_webapp(api, webapp, namespace)
    resources = [Resource(to_cr(webapp), WEBAPPS) for webapp in operator.webapps]
    wait_ready(
        api, resources, operator, namespace, timeout=timeout, cancel=cancel, interval=WEBAPP_POLL_S
    )
    desired = webapp_desired(api, operator, namespace)
    wait_for_desired_state(
        api,
        namespace,
        desired,
        timeout=deadline.remaining(1.0),
        what=f"{KIND} (operator)",
        cancel=cancel,
    )
    return desired


def remove_resources(
    cluster: ClusterTarget, target: Target, operator: Operator, namespace: str, *, timeout: float
) -> bool:
    """Delete the custom resources and wait until they and what they owned are gone (their
    finalizers, run by the operator, included); the baseline goes with them. The toolkit's
    operator is started when it runs no more (a fault stopped it): only it clears a WebApp's
    finalizer. False: none was there (nothing is started then)."""
    if not namespace or not all(body["metadata"]["name"] for body in operator.resources):
        # An empty name or namespace makes the DELETE address a whole collection.
        raise CompareError("custom resources to delete: empty name or namespace; nothing deleted")
    with cluster.api_client() as api:
        removed = []
        owners = []
        for body in operator.resources:
            what = api_of.served(api, str(body["apiVersion"]), str(body["kind"]))
            name = str(body["metadata"]["name"])
            live = api_of.read(api, what, namespace, name) if what is not None else None
            if what is not None and api_of.delete(api, what, namespace, name):
                removed.append((what, name))
                owners.extend([live] if live is not None else [])
        if operator.toolkit and removed:
            status = operator_status(cluster)
            if status is None or not status.running:
                start_operator(cluster)
        elif not operator.toolkit:
            baseline.delete(api, namespace, target.name)

        def left() -> list[str]:
            gone = [
                f"{w.kind} {namespace}/{n}" for w, n in removed if api_of.read(api, w, namespace, n)
            ]
            if gone or operator.toolkit:
                # A WebApp's children are the garbage collector's, as for the built-in app.
                return gone
            # Then what they owned, which the garbage collector deletes after them (not waited
            # for by a foreground deletion: the collector may not know a new CRD's kind yet).
            return [
                f"{o['kind']} {namespace}/{o['metadata']['name']}"
                for o in baseline.owned_objects(api, namespace, owners)
            ]

        wait_until_gone(
            left,
            deadline=timeout,
            timed_out=lambda still: CompareError(
                f"{', '.join(still)} still present {timeout:.0f}s after deletion (a finalizer"
                " its operator did not remove, or the garbage collector's backlog)",
                exit_code=EXIT_FAILED,
            ),
            interval=POLL_S,
        )
        return bool(removed)


def remaining(cluster: ClusterTarget, operator: Operator) -> int:
    """Custom resources of the target's kinds left in the whole cluster."""
    with cluster.api_client() as api:
        kinds = {(str(b["apiVersion"]), str(b["kind"])) for b in operator.resources}
        served = [api_of.served(api, api_version, kind_name) for api_version, kind_name in kinds]
        return sum(api_of.count(api, what) for what in served if what is not None)
