"""`patch_object` without a cluster: argument checks, what it sends, what it returns and how a
rejected patch fails (the API client is replaced by a fake that records the calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos import actions
from compare.chaos.actions import patch_object

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PAUSED = {"spec": {"paused": True}}
REMOVE_PROBE = [{"op": "remove", "path": "/spec/template/spec/containers/0/livenessProbe"}]


class FakeApi:
    """Stands for kubernetes.client.ApiClient: the stored objects are plain dicts already."""

    def __init__(self) -> None:
        self.closed = False

    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj

    def close(self) -> None:
        self.closed = True


class Recorder:
    """The typed APIs' patch calls: records them, answers with `stored` or raises `error`."""

    def __init__(self, stored: dict[str, Any], error: Exception | None = None) -> None:
        self.stored = stored
        self.error = error
        self.calls: list[tuple[str, str, str, Any, str | None]] = []
        self.api = FakeApi()

    def _patch(self, kind: str, name: str, ns: str, body: Any, **kwargs: Any) -> Any:
        self.calls.append((kind, name, ns, body, kwargs.get("_content_type")))
        if self.error is not None:
            raise self.error
        return self.stored

    def apps(self, api: Any) -> Any:
        assert api is self.api
        outer = self

        class Apps:
            def patch_namespaced_deployment(self, name: str, ns: str, body: Any, **kw: Any) -> Any:
                return outer._patch("deployment", name, ns, body, **kw)

        return Apps()

    def core(self, api: Any) -> Any:
        assert api is self.api
        outer = self

        class Core:
            def patch_namespaced_service(self, name: str, ns: str, body: Any, **kw: Any) -> Any:
                return outer._patch("service", name, ns, body, **kw)

        return Core()


def _deployment() -> dict[str, Any]:
    container = {"name": "webapp", "image": "myapp:v1"}
    return {
        "metadata": {"name": "web", "namespace": "shop", "uid": "d-1"},
        "spec": {"paused": True, "template": {"spec": {"containers": [container]}}},
    }


def _service() -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "shop", "uid": "s-1"},
        "spec": {"sessionAffinity": "ClientIP"},
    }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder(_deployment())
    monkeypatch.setattr(actions, "api_client", lambda secrets=None: recorder.api)
    monkeypatch.setattr(client, "AppsV1Api", recorder.apps)
    monkeypatch.setattr(client, "CoreV1Api", recorder.core)
    return recorder


def test_a_mapping_is_a_strategic_merge_patch_and_the_stored_value_is_returned(
    fake: Recorder,
) -> None:
    out = patch_object("deployment", "web", PAUSED, "deployment.spec.paused", ns="shop")
    assert out == {
        "object": "deployment",
        "name": "web",
        "uid": "d-1",
        "field": "deployment.spec.paused",
        "value": True,
    }
    assert fake.calls == [("deployment", "web", "shop", PAUSED, STRATEGIC)]
    assert fake.api.closed


def test_a_list_is_a_json_patch_and_a_removed_field_reads_as_none(fake: Recorder) -> None:
    field = "deployment.spec.template.spec.containers[webapp].livenessProbe"
    out = patch_object("Deployment", "web", REMOVE_PROBE, field, ns="shop")
    assert out["value"] is None and out["object"] == "deployment"
    assert fake.calls[0][3:] == (REMOVE_PROBE, JSON_PATCH)


def test_the_service_is_patched_through_the_core_api(fake: Recorder) -> None:
    fake.stored = _service()
    body = {"spec": {"sessionAffinity": "ClientIP"}}
    out = patch_object("service", "web", body, "service.spec.sessionAffinity", "shop", "merge")
    assert out["uid"] == "s-1" and out["value"] == "ClientIP"
    assert fake.calls == [("service", "web", "shop", body, MERGE)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "pod"}, "kind must be one of deployment, statefulset, daemonset, service,"),
        ({"patch_type": "apply"}, "patch_type must be one of strategic, merge, json"),
        ({"patch_type": "json"}, "patch_type 'json' does not fit a mapping"),
        ({"patch": REMOVE_PROBE, "patch_type": "merge"}, "'merge' does not fit a list"),
        ({"patch": {}}, "the patch is empty"),
        ({"patch": []}, "a JSON patch is a non-empty list of operations"),
        ({"patch": [{"path": "/spec/paused"}]}, "a JSON patch is a non-empty list"),
        ({"patch": "paused: true"}, "patch must be a list (JSON patch) or a mapping, got str"),
        ({"field": "spec.paused"}, "field path 'spec.paused': must start with one of"),
        ({"field": "service.spec.type"}, "field 'service.spec.type' must start with 'deployment'"),
        ({"field": ""}, "patch_object: field path ''"),
    ],
)
def test_bad_arguments_fail_in_one_line_before_anything_is_sent(
    fake: Recorder, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {
        "kind": "deployment",
        "name": "web",
        "ns": "shop",
        "patch": PAUSED,
        "field": "deployment.spec.paused",
        **kwargs,
    }
    with pytest.raises(ActivityFailed) as info:
        patch_object(**args)
    text = str(info.value)
    assert text.startswith("patch_object: ") and message in text
    assert "\n" not in text
    assert fake.calls == []


def test_a_patch_the_api_server_rejects_names_the_object_and_the_api_message(
    fake: Recorder,
) -> None:
    status = {
        "kind": "Status",
        "status": "Failure",
        "message": 'Deployment.apps "web" is invalid:\nspec.template.spec.containers[0]'
        ".securityContext: Invalid value: cannot set `allowPrivilegeEscalation` to false",
        "reason": "Invalid",
        "code": 422,
    }
    error = client.ApiException(status=422, reason="Unprocessable Entity")
    error.body = json.dumps(status)
    fake.error = error
    with pytest.raises(ActivityFailed) as info:
        patch_object("deployment", "web", PAUSED, "deployment.spec.paused", ns="shop")
    text = str(info.value)
    assert text == (
        'patching deployment shop/web failed: 422 Deployment.apps "web" is invalid:'
        " spec.template.spec.containers[0].securityContext: Invalid value: cannot set"
        " `allowPrivilegeEscalation` to false"
    )
    assert fake.api.closed


def test_without_a_status_body_the_http_reason_is_the_message(fake: Recorder) -> None:
    fake.error = client.ApiException(status=404, reason="Not Found")
    with pytest.raises(
        ActivityFailed, match=r"^patching deployment shop/web failed: 404 Not Found$"
    ):
        patch_object("deployment", "web", PAUSED, "deployment.spec.paused", ns="shop")


def test_the_action_is_exported_for_chaos_discover() -> None:
    assert "patch_object" in actions.__all__
