"""Objects of a chart that need its pods to run code, found from its rendering
(compare.deploy.code_pods): webhooks and APIServices served by the chart's own pods, hooks."""

from __future__ import annotations

from typing import Any

from compare.deploy.code_pods import REMEDY, left_out, needing_code

NS = "apps"


def _deployment(name: str, labels: dict[str, str], **meta: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c"}]}}
    return {
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": {"selector": {"matchLabels": labels}, "template": template},
    }


def _service(name: str, selector: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": name, **meta}, "spec": {"selector": selector}}


def _webhooks(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}, "webhooks": list(hooks)}


def _hook(name: str, service: str, namespace: str = NS, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"service": {"name": service, "namespace": namespace, "path": "/v"}},
        **extra,
    }


APP = [_deployment("web", {"app": "web", "tier": "front"}), _service("web", {"app": "web"})]


def test_a_webhook_served_by_the_charts_own_pods_is_found_fail_closed_by_default() -> None:
    objects = [*APP, _webhooks("ValidatingWebhookConfiguration", "guard", _hook("v.x.io", "web"))]
    (need,) = needing_code(objects, NS)
    assert (need.kind, need.name, need.switch) == (
        "ValidatingWebhookConfiguration",
        "guard",
        "dropUnservedWebhooks",
    )
    assert need.line() == (
        "ValidatingWebhookConfiguration guard: webhook v.x.io is served by Service web, which"
        " selects the chart's Deployment web (fail-closed: it refuses every request it"
        f" matches): {REMEDY}"
    )


def test_a_fail_open_webhook_is_found_but_not_removable() -> None:
    hooks = [
        _hook("m1.x.io", "web", failurePolicy="Ignore"),
        _hook("m2.x.io", "web", failurePolicy="Ignore"),
    ]
    (need,) = needing_code([*APP, _webhooks("MutatingWebhookConfiguration", "m", *hooks)], NS)
    assert not need.removable
    assert "webhook m1.x.io (and 1 more) is served by Service web" in need.line()
    assert "(fail-open)" in need.line()


def test_a_webhook_of_a_service_the_chart_does_not_serve_is_not_found() -> None:
    external = _hook("e.x.io", "cert-manager-webhook", namespace="cert-manager")
    url = {"name": "u.x.io", "clientConfig": {"url": "https://hooks.example.test/v"}}
    other_ns = _hook("o.x.io", "web", namespace="elsewhere")  # same name, another namespace
    no_selector = [
        _service("manual", {}),
        _webhooks("ValidatingWebhookConfiguration", "n", _hook("n.x.io", "manual")),
    ]
    unselected = [
        _service("stray", {"app": "nothing"}),
        _webhooks("ValidatingWebhookConfiguration", "s", _hook("s.x.io", "stray")),
    ]
    objects = [
        *APP,
        _webhooks("ValidatingWebhookConfiguration", "ext", external, url, other_ns),
        *no_selector,
        *unselected,
    ]
    assert needing_code(objects, NS) == []


def test_an_api_service_served_by_the_charts_pods_is_found() -> None:
    api = {
        "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"name": "web", "namespace": NS}, "group": "metrics.k8s.io"},
    }
    local = {"kind": "APIService", "metadata": {"name": "v1.apps"}, "spec": {"group": "apps"}}
    (need,) = needing_code([*APP, api, local], NS)
    assert need.line() == (
        "APIService v1beta1.metrics.k8s.io: its API is served by Service web, which selects"
        f" the chart's Deployment web: {REMEDY}"
    )
    # Left out by its own switch, never by the webhooks' one.
    assert need.switch == "dropUnservedAPIServices"


def test_each_switch_leaves_out_just_what_it_names() -> None:
    closed = _webhooks("ValidatingWebhookConfiguration", "guard", _hook("v.x.io", "web"))
    open_ = _webhooks(
        "MutatingWebhookConfiguration", "m", _hook("m.x.io", "web", failurePolicy="Ignore")
    )
    served = {
        "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"name": "web", "namespace": NS}},
    }
    elsewhere = {
        "kind": "APIService",
        "metadata": {"name": "v1.custom.metrics.k8s.io"},
        "spec": {"service": {"name": "adapter", "namespace": "monitoring"}},
    }
    objects = [*APP, closed, open_, served, elsewhere]
    assert left_out(objects, NS, ()) == []
    assert left_out(objects, NS, ("dropUnservedWebhooks",)) == [
        "ValidatingWebhookConfiguration/guard"
    ]
    assert left_out(objects, NS, ("dropUnservedAPIServices",)) == [
        "APIService/v1beta1.metrics.k8s.io"
    ]
    assert left_out(objects, NS, ("dropUnservedWebhooks", "dropUnservedAPIServices")) == [
        "ValidatingWebhookConfiguration/guard",
        "APIService/v1beta1.metrics.k8s.io",
    ]


def test_install_hooks_need_their_pods_to_run_code_test_hooks_are_never_run() -> None:
    def hooked(kind: str, name: str, phases: str) -> dict[str, Any]:
        return {"kind": kind, "metadata": {"name": name, "annotations": {"helm.sh/hook": phases}}}

    objects = [
        hooked("Job", "migrate", "pre-install,pre-upgrade"),
        hooked("Pod", "smoke", "test"),
        hooked("Pod", "wait", "post-install"),
        hooked("ConfigMap", "hooked-config", "pre-install"),
        {"kind": "Job", "metadata": {"name": "plain"}},
    ]
    assert [n.line() for n in needing_code(objects, NS)] == [
        f"Job migrate: a Helm pre-install, pre-upgrade hook: {REMEDY}",
        f"Pod wait: a Helm post-install hook: {REMEDY}",
    ]
    # A hook is what `disableHooks` never runs; it is not removable (not a webhook).
    assert all(n.hook and not n.removable for n in needing_code(objects, NS))


def test_a_hooks_pods_do_not_serve_a_webhook() -> None:
    # A hook Job's pods come and go: a Service selecting only them serves nothing for long.
    job = _deployment("setup", {"app": "setup"}, annotations={"helm.sh/hook": "test"})
    job["kind"] = "Job"
    objects = [
        job,
        _service("setup", {"app": "setup"}),
        _webhooks("ValidatingWebhookConfiguration", "w", _hook("w.x.io", "setup")),
    ]
    assert needing_code(objects, NS) == []
