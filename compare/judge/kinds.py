"""The object kinds the judge reads, watches and defaults, and their typed API calls.

One table, one row per kind: its typed API class, the method suffix and whether it lives in a
namespace (and from those its REST path, for requests without the typed classes:
`compare.judge.rest`); for a kind that makes pods, where its pod template sits, and for a
workload, which rules judge it. Every list of workload kinds, template path and choice of rule
in `compare` is derived from this table (`WORKLOAD_KINDS`, `template_path`, `pod_template`,
...): adding a kind is one row here (and its tests). Every caller goes through the scope-aware
calls (`list_call`, `create_call`, `read_call`), which take a namespace and drop it for a
cluster-scoped kind, so the judge reads, watches and dry-runs a ClusterRole exactly as it does a
Deployment. Any other kind the API server serves is judged by the same rule (a chart's custom
resources, an `APIService`): `resolve` finds it by discovery (its group/version, REST plural,
scope), under a qualified name (`Widget.v1.example.com`) that says which API serves it, and the
judge reads, watches and dry-runs it by path. A kind no API serves is a one-line error, never a
silently skipped object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.judge.rest import resource_path
from compare.kube.served import REQUEST_TIMEOUT as REQUEST_TIMEOUT  # re-exported
from compare.kube.served import served as served_kind

# How a workload's running pods are told to be of its current pod template
# (`compare.judge.rollout`): through the ReplicaSet of each template (a Deployment's), or by the
# ControllerRevision hash its controller labels each pod with (a StatefulSet's, a DaemonSet's).
REPLICASETS = "replicasets"
REVISIONS = "revisions"
# A kind's own rules beside its rollout (`compare.judge.workloads`): a StatefulSet's pods are
# its ordinals, a DaemonSet's pod count is proven against the nodes, a Job runs to completion.
ORDINALS = "ordinals"
NODES = "nodes"
COMPLETION = "completion"
SPEC_TEMPLATE = ("spec", "template")
# What each rule reports while a rollout is under way, as (start, end) of the problem, `{root}`
# the workload's field-path root (`compare.judge.rollout`, `compare.judge.workloads`): pods of
# the new template not all Ready yet and pods of the old one still running (both rollouts), and
# an ordinal a StatefulSet's rolling update has deleted to make again (ORDINALS). An allowed
# template change (`kubectl rollout restart`) passes through these and is no fault.
ROLLING: dict[str, tuple[tuple[str, str], ...]] = {
    REPLICASETS: (("pods.ready:", ""), ("pods.stale:", "")),
    REVISIONS: (("pods.ready:", ""), ("pods.stale:", "")),
    ORDINALS: (("{root}.pods:", " missing"),),
}


@dataclass(frozen=True)
class Kind:
    kind: str
    api: str  # the typed API class of kubernetes.client (looked up at each call)
    plural: str  # the method suffix: list_namespaced_<plural>, create_<plural>
    namespaced: bool = True
    # Where its pod template sits (None: it makes no pods; (): the object is a pod itself).
    template: tuple[str, ...] | None = None
    # A workload (the kinds an app's workload may be, searched in this table's order): how its
    # running pods are held to its current template, REPLICASETS or REVISIONS. None: they are
    # not (a Job's pods run to their end; a ReplicaSet's and a bare Pod are by-products).
    rollout: str | None = None
    # Its own rules beside the rollout (ORDINALS, NODES, COMPLETION), in the order they run.
    checks: tuple[str, ...] = ()
    # It wants one pod per node it is scheduled to (a DaemonSet), not `spec.replicas`.
    per_node: bool = False
    # A kind outside the table, found by discovery (`resolve`): the group/version that serves
    # it; `plural` is then its REST resource and it has no typed calls (read by path).
    served: str | None = None

    @property
    def workload(self) -> bool:
        """Whether it keeps pods of its current template running (see `rollout`)."""
        return self.rollout is not None

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules that judge a live object of this kind beside its fields, in order."""
        return ((self.rollout,) if self.rollout else ()) + self.checks

    def rolling(self, problem: str, root: str) -> bool:
        """Whether `problem` is one its rules report while a rollout of this workload is under
        way (`ROLLING`), not a fault of its own."""
        return any(
            problem.startswith(start.format(root=root)) and problem.endswith(end)
            for rule in self.rules
            for start, end in ROLLING.get(rule, ())
        )

    @property
    def group_version(self) -> str:
        """`apps/v1`, `v1` (the core group), ...: what the typed API class serves."""
        return self.served or _GROUP_VERSIONS[self.api]

    @property
    def resource(self) -> str:
        """The REST resource name: `deployments`, `ingresses`, `networkpolicies`."""
        if self.served:
            return self.plural
        word = self.plural.replace("_", "")
        if word.endswith("y"):
            return word[:-1] + "ies"
        return word + ("es" if word.endswith("s") else "s")

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The object's (or, without a name, the collection's) REST path; a cluster-scoped
        kind ignores the namespace."""
        where = namespace if self.namespaced else None
        return resource_path(self.group_version, self.resource, where, name)

    def call(self, api: client.ApiClient, verb: str) -> Callable[..., Any]:
        """The typed client's `<verb>_namespaced_<plural>` (or `<verb>_<plural>` for a
        cluster-scoped kind), with the typed client's own arguments."""
        if self.served:
            raise ValueError(f"kind {self.kind} ({self.served}) has no typed calls: read by path")
        scope = "namespaced_" if self.namespaced else ""
        typed = getattr(client, self.api)(api)
        return getattr(typed, f"{verb}_{scope}{self.plural}")  # type: ignore[no-any-return]

    def list_call(self, api: client.ApiClient) -> Callable[..., Any]:
        """`list(namespace, **params)`; a cluster-scoped kind lists the whole cluster."""
        return self._in_namespace(self.call(api, "list"))

    def create_call(self, api: client.ApiClient) -> Callable[..., Any]:
        """`create(namespace, body, **params)`."""
        return self._in_namespace(self.call(api, "create"))

    def read_call(self, api: client.ApiClient) -> Callable[..., Any]:
        """`read(name, namespace, **params)`."""
        fn = self.call(api, "read")
        if self.namespaced:
            return fn

        def read(name: str, _namespace: str, **params: Any) -> Any:
            return fn(name, **params)

        return read

    def _in_namespace(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.namespaced:
            return fn

        def cluster_wide(_namespace: str, *args: Any, **params: Any) -> Any:
            return fn(*args, **params)

        return cluster_wide


def _kinds(*rows: Kind) -> dict[str, Kind]:
    return {row.kind: row for row in rows}


_apps, _core, _rbac = "AppsV1Api", "CoreV1Api", "RbacAuthorizationV1Api"
_admission, _batch = "AdmissionregistrationV1Api", "BatchV1Api"
# The group/version each typed API class serves (for requests by path: `compare.judge.rest`).
_GROUP_VERSIONS = {
    _apps: "apps/v1",
    _core: "v1",
    _rbac: "rbac.authorization.k8s.io/v1",
    _admission: "admissionregistration.k8s.io/v1",
    _batch: "batch/v1",
    "NetworkingV1Api": "networking.k8s.io/v1",
    "DiscoveryV1Api": "discovery.k8s.io/v1",
    "PolicyV1Api": "policy/v1",
    "AutoscalingV2Api": "autoscaling/v2",
    "ApiextensionsV1Api": "apiextensions.k8s.io/v1",
    "SchedulingV1Api": "scheduling.k8s.io/v1",
    "StorageV1Api": "storage.k8s.io/v1",
}

KINDS: dict[str, Kind] = _kinds(
    Kind("Deployment", _apps, "deployment", template=SPEC_TEMPLATE, rollout=REPLICASETS),
    Kind("ReplicaSet", _apps, "replica_set", template=SPEC_TEMPLATE),
    Kind(
        "StatefulSet",
        _apps,
        "stateful_set",
        template=SPEC_TEMPLATE,
        rollout=REVISIONS,
        checks=(ORDINALS,),
    ),
    Kind(
        "DaemonSet",
        _apps,
        "daemon_set",
        template=SPEC_TEMPLATE,
        rollout=REVISIONS,
        checks=(NODES,),
        per_node=True,
    ),
    Kind("ControllerRevision", _apps, "controller_revision"),
    Kind("Service", _core, "service"),
    Kind("Pod", _core, "pod", template=()),
    # Read (never desired) to prove a DaemonSet's pod count against the node set.
    Kind("Node", _core, "node", namespaced=False),
    Kind("ConfigMap", _core, "config_map"),
    Kind("Secret", _core, "secret"),
    Kind("ServiceAccount", _core, "service_account"),
    Kind("PersistentVolumeClaim", _core, "persistent_volume_claim"),
    Kind("ResourceQuota", _core, "resource_quota"),
    Kind("LimitRange", _core, "limit_range"),
    Kind("Role", _rbac, "role"),
    Kind("RoleBinding", _rbac, "role_binding"),
    Kind("ClusterRole", _rbac, "cluster_role", namespaced=False),
    Kind("ClusterRoleBinding", _rbac, "cluster_role_binding", namespaced=False),
    Kind(
        "ValidatingWebhookConfiguration",
        _admission,
        "validating_webhook_configuration",
        namespaced=False,
    ),
    Kind(
        "MutatingWebhookConfiguration",
        _admission,
        "mutating_webhook_configuration",
        namespaced=False,
    ),
    Kind("Job", _batch, "job", template=SPEC_TEMPLATE, checks=(COMPLETION,)),
    Kind("CronJob", _batch, "cron_job", template=("spec", "jobTemplate", "spec", "template")),
    # Read beside a desired Service: a slice for it that its controller does not manage
    # (`compare.judge.endpoints`).
    Kind("EndpointSlice", "DiscoveryV1Api", "endpoint_slice"),
    Kind("Ingress", "NetworkingV1Api", "ingress"),
    Kind("NetworkPolicy", "NetworkingV1Api", "network_policy"),
    Kind("IngressClass", "NetworkingV1Api", "ingress_class", namespaced=False),
    Kind("PriorityClass", "SchedulingV1Api", "priority_class", namespaced=False),
    Kind("StorageClass", "StorageV1Api", "storage_class", namespaced=False),
    Kind("PodDisruptionBudget", "PolicyV1Api", "pod_disruption_budget"),
    Kind("HorizontalPodAutoscaler", "AutoscalingV2Api", "horizontal_pod_autoscaler"),
    Kind(
        "CustomResourceDefinition",
        "ApiextensionsV1Api",
        "custom_resource_definition",
        namespaced=False,
    ),
)
# What a trial watches: the workload, its Service, and what the rollout rule reads.
WATCHED = ("Deployment", "Service", "ReplicaSet", "Pod")
# Derived from the table, in its order: never spelled elsewhere (tests/architecture).
WORKLOAD_KINDS = tuple(name for name, row in KINDS.items() if row.workload)
# The kinds of the app's parts a fault acts on (drifts, deletes): its workload, Service,
# ConfigMap, Secret and RBAC binding.
PART_KINDS = (
    *WORKLOAD_KINDS,
    "Service",
    "ConfigMap",
    "Secret",
    "RoleBinding",
    "ClusterRoleBinding",
)
# Kinds that make pods from a template of theirs (a workload, a ReplicaSet, a Job, a CronJob).
POD_MAKERS = tuple(name for name, row in KINDS.items() if row.template)
# Kinds some rule judges beside their fields, in the order their problems are reported.
RULED_KINDS = tuple(name for name, row in KINDS.items() if row.rules)


def template_path(kind_name: str) -> tuple[str, ...] | None:
    """Where a kind's pod template sits (None: an unknown kind, or one that makes no pods)."""
    row = KINDS.get(kind_name)
    return None if row is None else row.template


def pod_template(obj: Mapping[str, Any], kind_name: str | None = None) -> Mapping[str, Any] | None:
    """The object's pod template (a Pod: itself), None when its kind has none or it is unset.
    `kind_name` when the caller knows the kind (an object as listed need not say it)."""
    path = template_path(kind_name or str(obj.get("kind")))
    if path is None:
        return None
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def workload_kind(kind_name: object) -> Kind | None:
    """The table's row of a workload kind (None: not a workload, or unknown)."""
    row = KINDS.get(str(kind_name))
    return row if row is not None and row.workload else None


# A namespaced object outside the namespace a reading is of (a chart's RoleBinding in
# kube-system) is read under a scoped kind name, `RoleBinding@kube-system`: its kind and the
# namespace it lives in, so that it never mixes with the reading's own objects of that kind.
SCOPE = "@"


def scoped(kind_name: str, namespace: str | None) -> str:
    """The reading's name for objects of `kind_name` in `namespace` (None: its own)."""
    return f"{kind_name}{SCOPE}{namespace}" if namespace else kind_name


def unscoped(name: str) -> tuple[str, str | None]:
    """(kind, namespace or None) of a reading's kind name."""
    base, _, namespace = name.partition(SCOPE)
    return base, namespace or None


def kind(name: str) -> Kind:
    name = unscoped(name)[0]
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted(KINDS))
        raise ValueError(f"kind {name!r} is not judged yet (known: {known})") from None


# -- any kind the API server serves --------------------------------------------------------------


def qualified(kind_name: str, api_version: str) -> str:
    """The name a reading holds a kind by: the table's kind name, or for any other kind its
    name, version and group (`Widget.v1.example.com`, `Binding.v1` in the core group), so two
    kinds of one name in two groups never mix (a Knative `Service` is no core Service)."""
    group, _, version = api_version.rpartition("/")
    if in_table(kind_name, api_version):
        return kind_name
    return ".".join(part for part in (kind_name, version, group) if part)


def in_table(kind_name: str, api_version: str) -> bool:
    """Whether an object of this kind and apiVersion is the table's kind (the same group; any
    version the API server converts)."""
    row = KINDS.get(kind_name)
    group = api_version.rpartition("/")[0]
    return row is not None and row.group_version.rpartition("/")[0] == group


def api_version_of(name: str) -> tuple[str, str] | None:
    """(kind, apiVersion) of a qualified name (None: a table kind, or no qualified name)."""
    base = unscoped(name)[0]
    kind_name, _, rest = base.partition(".")
    if not rest:
        return None
    version, _, group = rest.partition(".")
    return kind_name, f"{group}/{version}" if group else version


# Discovered kinds, per API server and qualified name: a kind's plural and scope are fixed
# while its CRD lives (both are immutable). Bounded: a run sees few kinds.
_RESOLVED: OrderedDict[tuple[str, str], Kind] = OrderedDict()
_resolved_lock = threading.Lock()
RESOLVED_SIZE = 256


def resolve(api: client.ApiClient, name: str) -> Kind:
    """The row of a reading's kind name (scoped or not): the table's, or for a qualified name
    the kind as the API server serves it (discovery). ValueError (one line) when neither knows
    it."""
    base = unscoped(name)[0]
    if base in KINDS:
        return KINDS[base]
    found = api_version_of(base)
    if found is None:
        return kind(base)  # the table's one-line error
    key = (str(api.configuration.host), base)
    with _resolved_lock:
        row = _RESOLVED.get(key)
    if row is not None:
        return row
    what = served_kind(api, found[1], found[0])
    if what is None:
        raise ValueError(f"no API serves {found[0]} ({found[1]})")
    row = Kind(found[0], "", what.plural, namespaced=what.namespaced, served=found[1])
    with _resolved_lock:
        _RESOLVED[key] = row
        while len(_RESOLVED) > RESOLVED_SIZE:
            _RESOLVED.popitem(last=False)
    return row


def watched_with(kinds: Iterable[str]) -> tuple[str, ...]:
    """WATCHED plus `kinds` (each once, in order): what to read to judge those objects."""
    return tuple(dict.fromkeys([*WATCHED, *kinds]))
