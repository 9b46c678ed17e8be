"""The contract every registered approach meets, checked the same way for each (parametrised
over `compare.approaches.REGISTRY`) on the real embedded cluster: a fourth approach proves it
fits by passing these. One namespace per test; nothing is mocked.

- names: a unique DNS label (a trial namespace, results.json, `compare deploy NAME`);
- round trip: `deploy` reaches the state `desired` describes (the closed-world judge finds
  no difference), `status` reports the app as holding, `undeploy` removes every object of it
  (what it leaves to the garbage collector, owned children, goes on its own);
- status of a charted approach: a release under a name and with values of its own is found
  and held to them;
- cleanup: after `cleanup` no object in the namespace carries a finalizer (none waits for a
  controller), and deleting the namespace leaves nothing.
"""

from __future__ import annotations

import re

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.resource import ResourceList

from compare.approaches import (
    REGISTRY,
    Approach,
    builtin_target,
    deployed_apps,
    desired_objects,
    names,
)
from compare.cluster import ClusterTarget
from compare.judge import DesiredObjects, problems, read
from tests.helpers import deploy_builtin, eventually, make_webapp, undeploy_builtin

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# How long a namespace may take to go once its app was cleaned up (a finalizer left behind
# would hold it forever).
NAMESPACE_GONE_S = 60.0

# How long the garbage collector may take the children of an undeployed owner. On a fresh
# cluster it learns a just-installed CRD's kind (the WebApp, the owner) only at its next
# discovery resync, every 30 s: until then it cannot look the owner up (a CI run's first test
# of the operator missed 30 s).
GARBAGE_COLLECTED_S = 90.0

BY_NAME = pytest.mark.parametrize("approach", REGISTRY, ids=names())


def test_names_are_unique_dns_labels_in_the_default_order() -> None:
    # The order of every output: unchanged, Argo CD after them.
    assert names() == ("helm", "operator", "flux", "argocd")
    for field in ("name", "short"):
        values = [getattr(a, field) for a in REGISTRY]
        assert len(set(values)) == len(values), field
        for value in values:
            # Short enough to leave room in a trial namespace's 63 characters.
            assert DNS_LABEL.fullmatch(value) and len(value) <= 16, (field, value)
    assert all(a.label for a in REGISTRY)


@BY_NAME
def test_settings_travel_with_the_instance(approach: Approach) -> None:
    settings = approach.settings()
    assert approach.configured(**settings) == approach
    assert approach.configured(no_such_setting=1) == approach  # other approaches' settings
    for name, value in settings.items():
        changed = approach.configured(**{name: value * 2})
        assert changed.settings()[name] == value * 2 and approach.settings()[name] == value


@BY_NAME
def test_desired_describes_the_app_without_a_cluster(approach: Approach) -> None:
    webapp = make_webapp("shop", replicas=1)
    objects = approach.known_desired(builtin_target(webapp), "ns-a")
    assert objects is not None
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service"} <= kinds
    # Namespaced objects are the namespace's; the same call gives the same objects.
    assert all(o["metadata"].get("namespace") in (None, "ns-a") for o in objects)
    assert approach.known_desired(builtin_target(webapp), "ns-a") == objects


@pytest.mark.cluster
@BY_NAME
def test_deploy_status_undeploy_round_trip(
    approach: Approach, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("shop", replicas=1)
    approach.prepare(cluster)
    deploy_builtin(cluster, approach, webapp, namespace)
    desired = desired_objects(api, approach.name, webapp, namespace)
    # What was deployed is exactly what `desired` says (closed world, pods included).
    assert problems(desired, read(api, namespace, desired.kinds)) == []
    rows = [a for a in approach.status(cluster, api, namespace) if a.namespace == namespace]
    assert [(r.approach, r.name, r.state) for r in rows] == [(approach.name, "shop", "holds")]
    assert rows[0].desired_replicas == 1 and rows[0].ready_replicas == 1
    # `compare status` lists it under this approach (helm-controller's release is also a
    # Helm release, so a Flux deploy has a helm row too).
    listed = deployed_apps(cluster, namespace)
    assert (approach.name, "shop") in [(a.approach, a.name) for a in listed]

    undeploy_builtin(cluster, approach, webapp, namespace)
    assert deployed_apps(cluster, namespace) == []
    # Nothing of it is left; owned children may take the garbage collector a moment.
    eventually(lambda: _left(api, namespace, desired) == [], timeout=GARBAGE_COLLECTED_S)


@pytest.mark.cluster
@BY_NAME
def test_cleanup_then_the_namespace_goes_and_leaves_nothing(
    approach: Approach, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("shop", replicas=1)
    approach.prepare(cluster)
    deploy_builtin(cluster, approach, webapp, namespace)
    approach.cleanup(cluster, builtin_target(webapp), namespace)
    # Nothing a controller must still finalize: the namespace can go without any running.
    assert _finalized(api, namespace) == []
    core = client.CoreV1Api(api)
    core.delete_namespace(namespace, propagation_policy="Background")

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone, timeout=NAMESPACE_GONE_S)


@pytest.mark.cluster
@pytest.mark.parametrize(
    "approach", [a for a in REGISTRY if a.charted], ids=[a.name for a in REGISTRY if a.charted]
)
def test_status_judges_a_release_by_its_own_name_and_values(
    approach: Approach, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    # What `compare deploy NAME --release R --values F` makes: `compare status` finds it and
    # holds it to that release and those values, not to the built-in defaults (a rendering
    # without the annotation or under the WebApp's name would find the live objects drifted).
    target = builtin_target(
        make_webapp("shop", replicas=1),
        release="by-hand",
        extra_values={"podAnnotations": {"deployed": "by-hand"}},
    )
    approach.prepare(cluster)
    approach.deploy_target(cluster, target, namespace, timeout=120)
    try:
        rows = [a for a in approach.status(cluster, api, namespace) if a.namespace == namespace]
        assert [(r.approach, r.name, r.state) for r in rows] == [
            (approach.name, "by-hand", "holds")
        ]
    finally:
        approach.undeploy_target(cluster, target, namespace)
    assert approach.status(cluster, api, namespace) == []


@BY_NAME
def test_a_detector_names_kinds_and_reasons(approach: Approach) -> None:
    detector = approach.detector()
    if detector is None:
        return  # detection not observable (plain Helm posts no Events)
    assert detector.kinds and all(reasons for reasons in detector.kinds.values())


def _finalized(api: client.ApiClient, namespace: str) -> list[str]:
    """Every object in the namespace that carries a finalizer, of any listable kind."""
    found = []
    for resource in DynamicClient(api).resources.search(namespaced=True):
        if isinstance(resource, ResourceList) or "list" not in (resource.verbs or []):
            continue  # the client's own list kinds, and kinds that cannot be listed
        try:
            items = resource.get(namespace=namespace).to_dict().get("items") or []
        except ApiException:
            continue  # an aggregated API that does not answer: nothing of ours
        found += [
            f"{resource.kind}/{i['metadata']['name']}"
            for i in items
            if i["metadata"].get("finalizers")
        ]
    return found


def _left(api: client.ApiClient, namespace: str, desired: DesiredObjects) -> list[tuple[str, str]]:
    """The desired objects still in the namespace."""
    wanted = {(i.kind, str(i.raw["metadata"]["name"])) for i in desired.items}
    reading = read(api, namespace, desired.kinds)
    live = {(kind, str(o["metadata"]["name"])) for kind, _ in wanted for o in reading.all(kind)}
    return sorted(live & wanted)
