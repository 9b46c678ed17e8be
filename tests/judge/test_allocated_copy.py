"""A copy of an object leaves out what the API server allocated (the allow-list's ALLOCATED
fields, the one definition), but what the patch applied to the copy sets."""

from __future__ import annotations

from typing import Any

from compare.chaos.fields import read_path
from compare.judge.allow import ALLOCATED, ALLOW_LIST, without_allocated

LOADBALANCER: dict[str, Any] = {
    "metadata": {
        "name": "web",
        "uid": "0b7c",
        "resourceVersion": "42",
        "creationTimestamp": "2026-12-06T10:00:00Z",
        "generation": 1,
        "managedFields": [{"manager": "helm"}],
    },
    "spec": {
        "type": "LoadBalancer",
        "externalTrafficPolicy": "Local",
        "clusterIP": "10.96.0.10",
        "clusterIPs": ["10.96.0.10"],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "healthCheckNodePort": 32000,
        "ports": [{"name": "http", "port": 80, "nodePort": 30080}, {"name": "b", "port": 81}],
    },
    "status": {"loadBalancer": {"ingress": [{"ip": "127.240.0.1", "ipMode": "VIP"}]}},
}


def test_every_allocated_field_is_left_out_and_the_rest_kept() -> None:
    # What the API server writes (status with the ingress address, uid, resourceVersion, ...)
    # goes too: the expected copy below has none of it.
    copied = without_allocated(LOADBALANCER)
    assert copied == {
        "metadata": {"name": "web"},
        "spec": {
            "type": "LoadBalancer",
            "externalTrafficPolicy": "Local",
            # The object's own (defaulted from the cluster): kept, the copy keeps its family.
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80}, {"name": "b", "port": 81}],
        },
    }
    assert LOADBALANCER["spec"]["clusterIP"] == "10.96.0.10"  # the original is untouched
    # Exactly the allow-list's ALLOCATED paths are gone.
    for entry in ALLOW_LIST:
        path = "service." + entry.path.replace("[*]", "[http]")
        if entry.rule == ALLOCATED:
            assert read_path(path, {"service": copied}) is None, path
            assert read_path(path, {"service": LOADBALANCER}) is not None, path


def test_what_the_patch_sets_is_kept_for_it() -> None:
    headless = {"spec": {"clusterIP": "None", "clusterIPs": ["None"]}}
    copied = without_allocated(LOADBALANCER, headless)
    assert copied["spec"]["clusterIP"] == "10.96.0.10"  # the patch replaces it
    assert "healthCheckNodePort" not in copied["spec"]
    ports = {"spec": {"ports": [{"name": "http", "port": 80, "nodePort": 30080}]}}
    assert without_allocated(LOADBALANCER, ports)["spec"]["ports"][0]["nodePort"] == 30080


def test_ip_families_follow_an_allocation_the_patch_redoes() -> None:
    spec = LOADBALANCER["spec"]
    headless = {"spec": {"clusterIP": "None", "clusterIPs": ["None"]}}
    # Redone: the families are derived anew, the default policy goes with them.
    assert "ipFamilies" not in without_allocated(LOADBALANCER, headless)["spec"]
    assert "ipFamilyPolicy" not in without_allocated(LOADBALANCER, headless)["spec"]
    # A request for two families is the object's own: it stays.
    dual = {**LOADBALANCER, "spec": {**spec, "ipFamilyPolicy": "PreferDualStack"}}
    assert without_allocated(dual, headless)["spec"]["ipFamilyPolicy"] == "PreferDualStack"
    # Families the patch sets are its own; a patch that keeps the allocation keeps them.
    ipv4 = {"spec": {"type": "ClusterIP", "ipFamilies": ["IPv4"]}}
    assert without_allocated(LOADBALANCER, ipv4)["spec"]["ipFamilies"] == ["IPv4"]
    labelled = {"metadata": {"labels": {"c": "1"}}}
    assert without_allocated(LOADBALANCER, labelled)["spec"]["ipFamilies"] == ["IPv4"]
    assert without_allocated(LOADBALANCER, labelled)["spec"]["ipFamilyPolicy"] == "SingleStack"
