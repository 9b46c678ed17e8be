"""What the faults act on, taken from the app's objects: the built-in WebApp keeps exactly the
names the experiments used before the variables existed; a target's chart gives its first
Deployment, that Deployment's selector and first container, and its first Service; an app
without a Service leaves the experiments that act on one out of the run, with the reason."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from chaoslib import substitute
from chaoslib.configuration import load_configuration

from compare import approaches
from compare.approaches import builtin_target, load_target
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import render_target
from compare.deploy.charts import webapp_manifest
from compare.errors import EXIT_USAGE, CompareError
from compare.paths import CHARTS_DIR, EXAMPLES_DIR, EXPERIMENTS_DIR
from compare.results import TrialResult
from compare.run import RunRequest, load_experiments
from compare.run.app import App
from compare.run.engine import plan_trials, runnable
from compare.run.experiments import configuration_defaults
from compare.run.trial import Ledger, TrialContext, TrialPlan, experiment_for
from compare.run.workload import Ref, needs_of, workload_of
from compare.target import release_in
from compare.webapp import DEFAULT_APP, load_webapp

SERVICE_FAULTS = (
    "service-delete",
    "service-label-remove",
    "service-port-change",
    "service-selector-change",
    "service-session-affinity",
)


def _target(folder: Path, chart: Path, **values: Any) -> Path:
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "shop",
        "helm": {"chart": {"path": str(chart)}, "release": "shop", "values": values},
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _chart_without_service(folder: Path) -> Path:
    """A chart of one Deployment (two containers, its own labels) and nothing else."""
    chart = folder / "worker"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: worker\nversion: 0.1.0\n")
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "{{ .Release.Name }}-worker"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "worker", "tier": "{{ .Release.Name }}"}},
            "template": {
                "metadata": {"labels": {"app": "worker", "tier": "{{ .Release.Name }}"}},
                "spec": {
                    "containers": [
                        {"name": "work", "image": "worker:1"},
                        {"name": "log", "image": "log:1"},
                    ]
                },
            },
        },
    }
    (chart / "templates" / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    return chart


def test_the_builtin_webapp_keeps_the_names_the_experiments_used() -> None:
    webapp = load_webapp()
    expected = {
        "webapp_workload": "webapp-demo",
        "webapp_workload_kind": "deployment",
        "webapp_pod_selector": (
            "app.kubernetes.io/name=webapp,app.kubernetes.io/instance=webapp-demo"
        ),
        "webapp_container": "webapp",
        "webapp_service": "webapp-demo",
        "webapp_service_port": "http",
        # The WebApp has no ConfigMap, Secret or RBAC binding: faults on them are skipped.
        "webapp_configmap": "",
        "webapp_secret": "",
        "webapp_rbac_binding": "",
        "webapp_rbac_binding_kind": "rolebinding",
    }
    # The built-in target's parts, as the run takes them: its chart rendered, and the
    # toolkit operator's rendering of the WebApp.
    app = App(builtin_target(webapp, DEFAULT_APP))
    app.check(("helm", "operator", "flux"))
    parts = app.workloads(("helm", "operator"))
    assert [w.configuration() for w in parts] == [expected, expected]


def test_a_target_chart_gives_its_main_services_workload_selector_container_and_service(
    tmp_path: Path,
) -> None:
    path = _target(tmp_path, CHARTS_DIR / "webapp-operator", manager={"replicas": 1})
    target = load_target(path)
    workload = workload_of(render_target(target, target.chart_arm("helm"), "shop"))
    configuration = workload.configuration()
    # Its one Service routes to its webhook's pods: that Deployment is the main workload,
    # not the manager Deployment first in manifest order.
    assert configuration == {
        "webapp_workload": "shop-webapp-operator-webhook",
        "webapp_workload_kind": "deployment",
        "webapp_pod_selector": "app.kubernetes.io/name=webapp-operator,"
        "app.kubernetes.io/instance=shop,app.kubernetes.io/component=webhook",
        "webapp_container": "webhook",
        "webapp_service": "shop-webapp-operator-webhook",
        "webapp_service_port": configuration["webapp_service_port"],
        "webapp_configmap": "",
        "webapp_secret": configuration["webapp_secret"],
        "webapp_rbac_binding": configuration["webapp_rbac_binding"],
        "webapp_rbac_binding_kind": configuration["webapp_rbac_binding_kind"],
    }
    # Its webhook Secret and its RBAC binding are parts faults can act on too.
    assert configuration["webapp_secret"] and configuration["webapp_rbac_binding"]
    assert configuration["webapp_service_port"]
    assert workload.ref("workload") and workload.ref("service")


def test_an_app_without_a_service_leaves_the_service_faults_out_with_the_reason(
    tmp_path: Path,
) -> None:
    target = load_target(_target(tmp_path, _chart_without_service(tmp_path)))
    workload = workload_of(render_target(target, target.chart_arm("helm"), "shop"))
    assert workload.name == "shop-worker" and workload.service is None
    assert workload.configuration()["webapp_pod_selector"] == "app=worker,tier=shop"
    assert workload.container == "work"  # the first container
    specs = load_experiments(["pod-delete-one", "image-change", *SERVICE_FAULTS])
    request = RunRequest(
        approaches=("helm",),
        experiments=tuple(specs),
        app=App(target, chart_workload=workload),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    assert [s.name for s in kept.experiments] == ["pod-delete-one", "image-change"]
    reason = "needs a Service (the app's manifest has none)"
    assert skipped == dict.fromkeys(SERVICE_FAULTS, reason)
    # Nothing left to run: one usage line naming each experiment and its reason.
    only = RunRequest(**{**request.__dict__, "experiments": tuple(specs[2:3])})
    with pytest.raises(CompareError) as caught:
        runnable(only, embedded=True)
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.message == f"nothing to run on this cluster: service-delete {reason}"


def test_the_builtin_webapp_skips_nothing(tmp_path: Path) -> None:
    specs = load_experiments(["pod-delete-one", "service-delete"])
    request = RunRequest(
        approaches=("helm",),
        experiments=tuple(specs),
        app=App(builtin_target(load_webapp(), Path("unused"))),
        output_dir=tmp_path,
    )
    assert runnable(request, embedded=True) == (request, {})


def test_each_builtin_fault_says_what_it_acts_on() -> None:
    needs = {spec.name: spec.needs for spec in load_experiments()}
    for name in SERVICE_FAULTS:
        assert needs[name] == ("service",), name
    # Pods (by the workload's selector), its ReplicaSets and the Deployment itself.
    for name in ("pod-delete-one", "replicaset-delete", "image-change", "deployment-delete"):
        assert needs[name] == ("workload",), name
    # Stopping the controller manager deletes pods by the workload's selector.
    assert needs["controller-manager-down"] == ("workload",)
    assert needs_of({"method": [{"provider": {"arguments": {"name": "x"}}}]}) == ()


def test_each_trial_has_a_release_of_its_own() -> None:
    target = load_target(Path(__file__).parents[2] / "examples" / "target-operator-chart.yaml")
    one = release_in(target.chart_arm("helm"), "cmp-helm-pod-delete-one-1-ab12")
    two = release_in(target.chart_arm("helm"), "cmp-helm-image-change-1-cd34")
    assert one.release != two.release
    assert one.release.startswith("webapp-operator-") and len(one.release) <= 53
    # The same namespace, the same release: the probes find the trial's release again.
    assert release_in(target.chart_arm("helm"), "cmp-helm-pod-delete-one-1-ab12") == one


class _Silent:
    def phase(self, plan: TrialPlan, phase: str) -> None:
        return None

    def finished(self, plan: TrialPlan, result: TrialResult) -> None:
        return None


def _trial_context(tmp_path: Path, target: Any = None) -> TrialContext:
    return TrialContext(
        run_id="r",
        run_dir=tmp_path,
        cluster=ClusterTarget(tmp_path / "kubeconfig"),
        app=App(builtin_target(load_webapp(), DEFAULT_APP)) if target is None else App(target),
        heal_window=10.0,
        settle=1.0,
        recheck=2.0,
        keep=False,
        cancel=threading.Event(),
        ledger=Ledger(),
        listener=_Silent(),
    )


def _resolved(document: dict[str, Any]) -> dict[str, Any]:
    """The injection's arguments as chaoslib substitutes them when it runs the experiment."""
    configuration = load_configuration(document["configuration"])
    action = document["method"][0]["provider"]["arguments"]
    resolved: dict[str, Any] = substitute(action, configuration, {})
    return resolved


def test_a_builtin_trial_acts_on_the_objects_it_always_did(tmp_path: Path) -> None:
    specs = {s.name: s for s in load_experiments(["pod-delete-one", "image-change"])}
    ctx = _trial_context(tmp_path)
    workload = workload_of(webapp_manifest(load_webapp()))
    pods = _resolved(experiment_for(specs["pod-delete-one"], ctx, "helm", "ns", workload))
    assert pods["label_selector"] == (
        "app.kubernetes.io/name=webapp,app.kubernetes.io/instance=webapp-demo"
    )
    image = _resolved(experiment_for(specs["image-change"], ctx, "helm", "ns", workload))
    assert (image["name"], image["container"], image["ns"]) == ("webapp-demo", "webapp", "ns")


def test_a_target_trial_acts_on_the_charts_objects(tmp_path: Path) -> None:
    target = load_target(_target(tmp_path, _chart_without_service(tmp_path)))
    workload = workload_of(render_target(target, target.chart_arm("helm"), "ns"))
    spec = load_experiments(["image-change"])[0]
    document = experiment_for(spec, _trial_context(tmp_path, target), "helm", "ns", workload)
    assert _resolved(document) == {
        "name": "shop-worker",
        "ns": "ns",
        "image": "myapp:chaos",
        "container": "work",
        "kind": "deployment",
    }
    # The probes judge the trial's release: their app file is the target file.
    assert document["configuration"]["webapp_app_file"] == str(target.source.resolve())
    # The evidence tracks the chart's own container, resolved as chaoslib resolves arguments.
    values = configuration_defaults(document["configuration"])
    assert spec.evidence_for(values) == (
        "deployment",
        "deployment.spec.template.spec.containers[work].image",
    )


def _object(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}, "spec": spec}


def _pod_set(kind: str, name: str) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": f"{name}-main", "image": "x:1"}]}}
    return _object(kind, name, selector={"matchLabels": {"app": name}}, template=template)


def test_the_workload_is_the_first_deployment_else_statefulset_else_daemonset() -> None:
    agent, db, web = _pod_set("DaemonSet", "agent"), _pod_set("StatefulSet", "db"), None
    web = _pod_set("Deployment", "web")
    assert (workload_of([agent, db, web]).kind, workload_of([agent, db, web]).name) == (
        "Deployment",
        "web",
    )
    only_sets = workload_of([agent, db])
    assert (only_sets.kind, only_sets.name, only_sets.container) == ("StatefulSet", "db", "db-main")
    assert only_sets.configuration()["webapp_workload_kind"] == "statefulset"
    assert workload_of([agent]).configuration()["webapp_pod_selector"] == "app=agent"
    # An unnamed Service port is named by its index; a ClusterRoleBinding when no RoleBinding.
    service = _object("Service", "svc", ports=[{"port": 80}])
    binding = _object("ClusterRoleBinding", "crb")
    parts = workload_of([service, binding]).configuration()
    assert parts["webapp_service_port"] == "0"
    assert (parts["webapp_rbac_binding"], parts["webapp_rbac_binding_kind"]) == (
        "crb",
        "clusterrolebinding",
    )


def test_a_part_the_chart_puts_in_another_namespace_is_never_taken() -> None:
    def placed(kind: str, name: str, namespace: str | None) -> dict[str, Any]:
        obj = _object(kind, name)
        if namespace:
            obj["metadata"]["namespace"] = namespace
        return obj

    elsewhere = placed("RoleBinding", "auth-reader", "kube-system")
    config = placed("ConfigMap", "shared", "kube-system")
    web = _pod_set("Deployment", "web")
    parts = workload_of([elsewhere, config, web, placed("ClusterRoleBinding", "crb", None)])
    assert parts.ref("rbac-binding") == Ref("ClusterRoleBinding", "crb")
    assert parts.ref("configmap") is None
    # The chart names its release's namespace on its main parts and this RoleBinding: taken.
    web["metadata"]["namespace"] = "shop"
    own = placed("RoleBinding", "reader", "shop")
    assert workload_of([elsewhere, own, web]).ref("rbac-binding") == Ref("RoleBinding", "reader")


def test_a_fault_for_other_kinds_is_left_out_with_the_reason(tmp_path: Path) -> None:
    db = workload_of([_pod_set("StatefulSet", "db"), _object("Service", "db")])
    specs = load_experiments(
        ["pod-delete-one", "image-change", "deployment-paused", "replicaset-delete"]
    )
    request = RunRequest(
        approaches=("helm",),
        experiments=tuple(specs),
        app=App(load_target(EXAMPLES_DIR / "target-shop.yaml"), chart_workload=db),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    assert [s.name for s in kept.experiments] == ["pod-delete-one", "image-change"]
    assert skipped == dict.fromkeys(
        ["deployment-paused", "replicaset-delete"],
        "applies to a Deployment only (the app's is StatefulSet db)",
    )


def _experiment_with(tmp_path: Path, **extension: Any) -> Path:
    data = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    data["extensions"][0].update(extension)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (["Pod"], "extensions[compare].kinds: unknown kind 'Pod' (known: Deployment, "),
        (["Service"], "extensions[compare].kinds: lists no kind of the workload its activities"),
        ("Deployment", "extensions[compare].kinds: must be a list, got a string 'Deployment'"),
    ],
)
def test_a_bad_kinds_list_is_one_line_naming_the_file_and_key(
    tmp_path: Path, kinds: Any, message: str
) -> None:
    path = _experiment_with(tmp_path, kinds=kinds)
    with pytest.raises(CompareError) as caught:
        load_experiments([str(path)])
    assert caught.value.message.startswith(f"{path}: {message}")
    assert "\n" not in caught.value.message


def test_a_bad_required_field_is_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    path = _experiment_with(tmp_path, **{"requires-field": "spec.template"})
    with pytest.raises(CompareError) as caught:
        load_experiments([str(path)])
    assert caught.value.message.startswith(
        f"{path}: extensions[compare].requires-field: field path 'spec.template': must start"
    )


def test_an_experiment_without_kinds_acts_on_a_deployment_as_before(tmp_path: Path) -> None:
    data = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    del data["extensions"][0]["kinds"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    spec = load_experiments([str(path)])[0]
    db = workload_of([_pod_set("StatefulSet", "db")])
    assert spec.unmet(embedded=True, workload=db) == (
        "applies to a Deployment only (the app's is StatefulSet db)"
    )
    assert spec.unmet(embedded=True, workload=workload_of(webapp_manifest(load_webapp()))) is None


def test_an_operator_targets_parts_are_what_its_resources_own(tmp_path: Path) -> None:
    # The operator arm's parts come from its baseline (here: a Deployment, no Service); an
    # experiment either arm cannot run is left out of the run, and a fault of the toolkit's
    # own operator process acts on nothing of a target's operator.
    from compare.paths import EXAMPLES_DIR
    from compare.run.workload import OWNED

    target = load_target(EXAMPLES_DIR / "target-shop.yaml")
    owned = workload_of(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "shop"},
                "spec": {
                    "selector": {"matchLabels": {"app": "shop"}},
                    "template": {"spec": {"containers": [{"name": "web", "image": "a"}]}},
                },
            }
        ],
        source=OWNED,
    )
    specs = load_experiments(["pod-delete-one", "service-delete", "operator-down-drift"])
    request = RunRequest(
        approaches=("helm", "operator"),
        experiments=tuple(specs),
        app=App(
            target,
            chart_workload=workload_of(render_target(target, target.chart_arm("helm"), "shop")),
            operator_workload=owned,
        ),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    # Decided per approach: the Service fault runs for the chart, whose arm deploys a
    # Service, and is skipped for the operator, whose resources own none.
    assert [(s.name, s.approaches) for s in kept.experiments] == [
        ("pod-delete-one", approaches.names()),
        ("service-delete", tuple(a for a in approaches.names() if a != "operator")),
    ]
    assert kept.experiments[1].skipped_for == {
        "operator": "needs a Service (the operator's baseline of owned objects has none)"
    }
    assert [(p.experiment.name, p.approach) for p in plan_trials(kept)] == [
        ("pod-delete-one", "helm"),
        ("pod-delete-one", "operator"),
        ("service-delete", "helm"),
    ]
    assert skipped == {
        "operator-down-drift": "acts on an operator process the toolkit runs (its own, or a"
        " target's install.process), not an operator it does not run",
    }


def test_a_template_label_the_workload_selects_by_is_not_changed_but_skipped() -> None:
    # label-change changes the pod template's app.kubernetes.io/component: a chart that selects
    # its pods by that label would have the change refused (422), so the fault is skipped.
    spec = next(s for s in load_experiments(()) if s.name == "label-change")
    web = _pod_set("Deployment", "web")
    # A template without the label gets it added (compare.chaos.choices): it runs.
    assert spec.unmet(embedded=True, workload=workload_of([web])) is None
    web["spec"]["template"]["metadata"] = {"labels": {"app.kubernetes.io/component": "web"}}
    assert spec.unmet(embedded=True, workload=workload_of([web])) is None
    web["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] = "manager"
    assert spec.unmet(embedded=True, workload=workload_of([web])) == (
        "changes the pod-template label app.kubernetes.io/component, which the app's workload"
        " selects its pods by (the API server refuses that change)"
    )
    assert spec.unmet(embedded=True, workload=workload_of(webapp_manifest(load_webapp()))) is None
