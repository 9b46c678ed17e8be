"""A foreign EndpointSlice for the Service of a deployed arm is drift, against the real API
server: the catalogue's action adds one beside the pods, the judge reads the Service's slices
(its controller's hold), and the state holds again only once that slice is gone."""

from __future__ import annotations

import pytest
from kubernetes import client

from compare.approaches import desired_objects
from compare.chaos.actions import add_endpoint_slice
from compare.chaos.cluster import trial_secrets
from compare.cluster import ClusterTarget
from compare.judge import Reading, problems, read
from compare.run.evidence import TrialJudge
from tests.helpers import deploy_webapp, eventually, make_webapp

pytestmark = pytest.mark.cluster


def test_a_foreign_endpointslice_for_the_helm_arms_service_is_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp(replicas=1)
    deploy_webapp(cluster, webapp, namespace, timeout=60)
    desired = desired_objects(api, "helm", webapp, namespace)
    assert desired.service is not None
    # The EndpointSlice controller's own slice for the Service is there, and holds.

    def with_own_slice() -> Reading | None:
        reading = read(api, namespace, desired.kinds)
        return reading if reading.all("EndpointSlice") else None

    baseline = eventually(with_own_slice, what="the Service's own EndpointSlice")
    assert problems(desired, baseline) == []
    judge = TrialJudge(desired, "service", "endpointslices.foreign", baseline)
    assert judge.before == []

    added = add_endpoint_slice(desired.service.name, namespace, secrets=trial_secrets(cluster))
    assert added["value"] == [added["name"]]
    reading = read(api, namespace, desired.kinds)
    found = [p for p in problems(desired, reading) if "EndpointSlice" in p]
    assert found == [
        f"service: EndpointSlice {added['name']} routes it to 192.0.2.10 but is not its"
        " controller's (managed-by: none)"
    ]
    seen = judge.observe(reading, reading.at)
    assert not seen.holds and seen.fault and seen.value == [added["name"]]

    client.DiscoveryV1Api(api).delete_namespaced_endpoint_slice(added["name"], namespace)
    after = read(api, namespace, desired.kinds)
    assert problems(desired, after) == []
    assert judge.observe(after, after.at).holds
