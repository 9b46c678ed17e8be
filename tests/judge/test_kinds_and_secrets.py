"""The judge's kind table names real typed calls for every kind (namespaced and cluster-scoped),
and a Secret's values are judged by hash: drift is named by key, the value never appears."""

from __future__ import annotations

import base64
import hashlib

import pytest
from kubernetes import client

from compare.judge import as_given, diff_object
from compare.judge.kinds import KINDS, WATCHED, kind, watched_with
from compare.judge.secrets import hashed_secret

SECRET_VALUE = "hunter2-do-not-print"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(**data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "type": "Opaque",
        "data": {key: _b64(value) for key, value in data.items()},
    }


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_its_typed_calls(name: str) -> None:
    api = client.ApiClient()
    row = kind(name)
    for verb in ("list", "create", "read", "patch", "delete"):
        assert callable(row.call(api, verb)), (name, verb)
    scope = "namespaced_" if row.namespaced else ""
    assert row.call(api, "list").__name__ == f"list_{scope}{row.plural}"


def test_cluster_scoped_kinds_are_known_as_such() -> None:
    cluster_scoped = {name for name, row in KINDS.items() if not row.namespaced}
    assert {
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "CustomResourceDefinition",
    } <= cluster_scoped
    assert {"Secret", "Role", "RoleBinding", "ServiceAccount"}.isdisjoint(cluster_scoped)


def test_an_unknown_kind_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"kind 'Gadget' is not judged yet \(known: ClusterRole"):
        kind("Gadget")


def test_watched_with_adds_each_kind_once() -> None:
    assert watched_with(["Secret", "Service", "Secret"]) == (*WATCHED, "Secret")


def test_secret_values_are_hashes() -> None:
    hashed = hashed_secret(_secret(password=SECRET_VALUE))
    want = "sha256:" + hashlib.sha256(SECRET_VALUE.encode()).hexdigest()
    assert hashed["data"] == {"password": want}
    assert hashed_secret(hashed) == hashed  # idempotent
    # stringData is folded into data as the API server does, and wins for the same key.
    both = {**_secret(password="old"), "stringData": {"password": SECRET_VALUE}}
    assert hashed_secret(both)["data"] == {"password": want}
    assert "stringData" not in hashed_secret(both)
    # Other kinds are untouched.
    config = {"kind": "ConfigMap", "data": {"a": "b"}}
    assert hashed_secret(config) == config


def test_secret_drift_is_named_by_key_never_by_value() -> None:
    desired = _secret(password=SECRET_VALUE, user="admin")
    live = _secret(password="changed-" + SECRET_VALUE, token="new-" + SECRET_VALUE)
    found = diff_object("secret", desired, live)
    text = "\n".join(str(m) for m in found)
    assert [(m.path, m.change) for m in found] == [
        ("secret.data.password", "changed"),
        ("secret.data.token", "added"),
        ("secret.data.user", "removed"),
    ]
    assert SECRET_VALUE not in text and _b64(SECRET_VALUE) not in text
    for mismatch in found:
        for side in (mismatch.desired, mismatch.actual):
            assert side is None or str(side).startswith("sha256:")
    assert diff_object("secret", desired, _secret(password=SECRET_VALUE, user="admin")) == []


def test_desired_objects_keep_no_secret_value() -> None:
    desired = as_given([_secret(password=SECRET_VALUE)])
    item = desired.items[0]
    for form in (item.raw, item.defaulted):
        assert SECRET_VALUE not in repr(form) and _b64(SECRET_VALUE) not in repr(form)
    assert desired.kinds == (*WATCHED, "Secret")
