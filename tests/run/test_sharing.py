"""Whether two trials of an app can share the cluster, from its manifest (compare.run.sharing)."""

from __future__ import annotations

from typing import Any

from compare.run.sharing import cannot_share, fixed_names, node_claims


def _workload(kind: str, name: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    template = {"spec": pod_spec}
    if kind == "CronJob":
        return {
            "kind": kind,
            "metadata": {"name": name},
            "spec": {"jobTemplate": {"spec": {"template": template}}},
        }
    if kind == "Pod":
        return {"kind": kind, "metadata": {"name": name}, "spec": pod_spec}
    return {"kind": kind, "metadata": {"name": name}, "spec": {"template": template}}


def test_host_ports_and_the_host_network_are_claims_on_the_node() -> None:
    ports = {"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    init = {"initContainers": [{"name": "i", "ports": [{"containerPort": 1, "hostPort": 9}]}]}
    objects = [
        _workload("DaemonSet", "agent", {"hostNetwork": True, "containers": []}),
        _workload("Deployment", "web", ports),
        _workload("CronJob", "nightly", init),
        _workload("Pod", "bare", ports),
        _workload(
            "StatefulSet",
            "db",
            {"containers": [{"name": "db", "ports": [{"containerPort": 5432}]}]},
        ),
        {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"hostNetwork": "true"}},
    ]
    assert node_claims(objects) == [
        "DaemonSet agent: its pods use the host network",
        "Deployment web: host port 8080",
        "CronJob nightly: host port 9",
        "Pod bare: host port 8080",
    ]


def test_names_that_do_not_follow_the_trial_are_fixed() -> None:
    def render(ns: str) -> list[dict[str, Any]]:
        return [
            {"kind": "ClusterRole", "metadata": {"name": "agent-reader"}},
            {"kind": "ClusterRole", "metadata": {"name": f"{ns}-app"}},
            {"kind": "ConfigMap", "metadata": {"name": "cfg"}},
            {"kind": "ConfigMap", "metadata": {"name": "shared", "namespace": "monitoring"}},
            {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": f"hook-{ns}"}},
        ]

    assert fixed_names(render("a"), render("b")) == [
        "ClusterRole agent-reader: a fixed name",
        "ConfigMap shared in namespace monitoring: a fixed name",
    ]
    assert cannot_share(render("a"), render("b")) == fixed_names(render("a"), render("b"))


def test_an_app_of_its_own_namespace_shares_the_cluster() -> None:
    def render(ns: str) -> list[dict[str, Any]]:
        return [
            _workload(
                "Deployment",
                "web",
                {"containers": [{"name": "w", "ports": [{"containerPort": 80}]}]},
            ),
            {"kind": "ClusterRoleBinding", "metadata": {"name": f"{ns}-web"}},
        ]

    assert cannot_share(render("a"), render("b")) == []


def _crd(kind: str, scope: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.example.com"},
        "spec": {"group": "example.com", "names": {"kind": kind}, "scope": scope},
    }


def test_custom_resources_are_placed_by_their_crds_and_other_kinds_taken_as_cluster_wide() -> None:
    def render(ns: str) -> list[dict[str, Any]]:
        return [
            _crd("Layout", "Cluster"),  # rendered by the chart: says its kind's scope too
            {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "one"}},
            {"apiVersion": "example.com/v1", "kind": "Layout", "metadata": {"name": "fixed"}},
            {"apiVersion": "example.com/v1", "kind": "Layout", "metadata": {"name": ns}},
            # Neither the table nor the chart's CRDs know it: taken as cluster-wide.
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": "v1.x"},
            },
        ]

    # The Gizmo's CRD is in the chart's crds/: namespaced, so one per trial namespace.
    assert cannot_share(render("a"), render("b"), [_crd("Gizmo", "Namespaced")]) == [
        "CustomResourceDefinition layouts.example.com: a fixed name",
        "Layout fixed: a fixed name",
        "APIService v1.x: a fixed name",
    ]
    # Without its CRD, the Gizmo's scope is not known: it may be cluster-wide.
    assert "Gizmo one: a fixed name" in cannot_share(render("a"), render("b"))
