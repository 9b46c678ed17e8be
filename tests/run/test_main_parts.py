"""The app's main parts, the ones the faults act on, chosen by one rule
(`compare.judge.parts.main_parts`) over rendered manifests: the workload whose pods the main
Service selects, not the first Deployment; the main Service, not a headless one first in
manifest order; the parts a target file names (`parts`), renamed with a trial's release, and
a name the rendering does not hold refused naming the key. The planning (`workload_of`, with
the shape checks on the chosen parts) and the judge (`DesiredObjects`) choose the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.approaches import load_target
from compare.deploy.chart_target import render_target
from compare.judge import DesiredObject, DesiredObjects
from compare.judge.parts import PartNotFound, main_parts
from compare.run.app import App
from compare.run.experiments import load_spec
from compare.run.workload import workload_of
from compare.target import release_in

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "parts-app"


def _workload(kind: str, name: str, component: str, port: str | None = None) -> dict[str, Any]:
    labels = {"app": "x", "component": component}
    container: dict[str, Any] = {"name": component, "image": "x:1"}
    if port is not None:
        container["ports"] = [{"name": port, "containerPort": 8080}]
    return {
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def _service(name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    ports = [{"name": "http", "port": 80, "targetPort": "http"}]
    return {
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector, "ports": ports, **spec},
    }


def _names(found: tuple[Any, Any]) -> tuple[str | None, str | None]:
    return tuple(None if o is None else f"{o['kind']}/{o['metadata']['name']}" for o in found)  # type: ignore[return-value]


def _rendered(tmp_path: Path, **parts: str) -> tuple[Any, list[dict[str, Any]]]:
    data: dict[str, Any] = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "parts",
        "helm": {"chart": {"path": str(CHART)}, "release": "rel"},
    }
    if parts:
        data["parts"] = parts
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    target = load_target(path)
    return target, render_target(target, target.chart_arm("helm"), "ns")


def test_the_main_services_statefulset_wins_over_a_toolbox_deployment(tmp_path: Path) -> None:
    # parts-app: a headless Service first, then the server's Service; a toolbox Deployment
    # (first workload in the table's order) that no Service selects.
    _, objects = _rendered(tmp_path)
    assert _names(main_parts(objects)) == ("StatefulSet/rel-server", "Service/rel-server")
    parts = workload_of(objects)
    assert (parts.kind, parts.name, parts.service) == ("StatefulSet", "rel-server", "rel-server")
    assert parts.pod_selector == {
        "app.kubernetes.io/instance": "rel",
        "app.kubernetes.io/component": "server",
    }
    assert parts.container == "server"
    # The shape checks read the chosen parts: the main Service is not headless, so a headless
    # copy of it changes something and runs.
    assert parts.objects["service"]["metadata"]["name"] == "rel-server"
    assert parts.objects["statefulset"]["metadata"]["name"] == "rel-server"
    headless = load_spec("service-recreated-headless")
    assert headless.unmet(embedded=True, workload=parts) is None


def test_named_parts_win_and_the_shape_check_applies_to_them(tmp_path: Path) -> None:
    target, objects = _rendered(
        tmp_path, workload="Deployment/rel-toolbox", service="rel-server-headless"
    )
    names = target.part_names()
    assert names == (("Deployment/rel-toolbox",), ("rel-server-headless",))
    parts = workload_of(objects, workload_names=names[0], service_names=names[1])
    assert (parts.kind, parts.name, parts.service) == (
        "Deployment",
        "rel-toolbox",
        "rel-server-headless",
    )
    assert parts.container == "toolbox"
    # The named Service is headless: its headless copy changes nothing and is skipped.
    headless = load_spec("service-recreated-headless")
    assert headless.unmet(embedded=True, workload=parts) == (
        "changes nothing: service.spec.clusterIP is 'None' in the app's manifest already"
    )


def test_a_named_service_brings_the_workload_it_selects() -> None:
    objects = [
        _workload("Deployment", "toolbox", "toolbox"),
        _workload("StatefulSet", "db", "db", port="http"),
        _service("db-headless", {"app": "x", "component": "db"}, clusterIP="None"),
    ]
    assert _names(main_parts(objects, service=("db-headless",))) == (
        "StatefulSet/db",
        "Service/db-headless",
    )
    # Without a routed Service: the first workload in the table's order, and the one Service.
    assert _names(main_parts(objects)) == ("Deployment/toolbox", "Service/db-headless")


def test_a_trials_release_renames_the_named_parts(tmp_path: Path) -> None:
    target, _ = _rendered(tmp_path, workload="StatefulSet/rel-server", service="other")
    trial = release_in(target.chart_arm("helm"), "cmp-ns-1").release
    assert target.part_names("helm", "cmp-ns-1") == (
        (f"StatefulSet/{trial}-server", "StatefulSet/rel-server"),
        ("other",),  # a name without the release stays as it is
    )
    assert target.part_names() == (("StatefulSet/rel-server",), ("other",))


def test_each_chart_arm_renames_the_named_parts_with_its_own_release(tmp_path: Path) -> None:
    # Written with the flux arm's release; the helm arm's is longer and starts with it.
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "parts",
        "parts": {"workload": "StatefulSet/rel-server"},
        "flux": {"chart": {"path": str(CHART)}, "release": "rel"},
        "helm": {"chart": {"path": str(CHART)}, "release": "relh"},
    }
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    target = load_target(path)
    assert target.part_names("helm")[0] == ("StatefulSet/relh-server", "StatefulSet/rel-server")
    assert target.part_names("flux")[0] == ("StatefulSet/rel-server",)
    helm = render_target(target, target.chart_arm("helm"), "ns")
    assert workload_of(helm, workload_names=target.part_names("helm")[0]).name == "relh-server"
    # A run checks the name in each chart arm's rendering; each arm's parts are its own.
    app = App(target)
    app.check(("helm", "flux"))
    helm_parts, flux_parts = app.parts("helm"), app.parts("flux")
    assert helm_parts is not None and helm_parts.name == "relh-server"
    assert flux_parts is not None and flux_parts.name == "rel-server"
    # Written with the helm arm's release, the longer one is the one replaced.
    data["parts"] = {"workload": "StatefulSet/relh-server"}
    path.write_text(yaml.safe_dump(data))
    assert load_target(path).part_names("flux")[0] == (
        "StatefulSet/rel-server",
        "StatefulSet/relh-server",
    )


@pytest.mark.parametrize(
    ("services", "main"),
    [
        # Exposure first: a LoadBalancer Service over a ClusterIP one.
        (
            [
                _service("web", {"app": "x", "component": "web"}),
                _service("web-public", {"app": "x", "component": "web"}, type="LoadBalancer"),
            ],
            "web-public",
        ),
        # Then the shortest name: `-metrics` is an auxiliary Service of the same pods.
        (
            [
                _service("web-metrics", {"app": "x", "component": "web"}),
                _service("web", {"app": "x", "component": "web"}),
            ],
            "web",
        ),
        # A Service that selects no workload's pods, or an ExternalName one, is not the main one.
        (
            [
                _service("a", {"app": "other"}),
                _service("b", {}, type="ExternalName", externalName="x.example.com"),
                _service("web-long-name", {"app": "x", "component": "web"}),
            ],
            "web-long-name",
        ),
    ],
)
def test_the_main_service_by_its_documented_order(
    services: list[dict[str, Any]], main: str
) -> None:
    objects = [_workload("Deployment", "web", "web", port="http"), *services]
    assert _names(main_parts(objects)) == ("Deployment/web", f"Service/{main}")


def test_several_selected_workloads_prefer_the_one_serving_the_targeted_port() -> None:
    labels = {"app": "x"}
    side = _workload("Deployment", "a-side", "side")
    server = _workload("StatefulSet", "z-server", "server", port="http")
    for obj in (side, server):
        obj["spec"]["template"]["metadata"]["labels"] = labels
    objects = [side, server, _service("web", labels)]
    assert _names(main_parts(objects))[0] == "StatefulSet/z-server"


@pytest.mark.parametrize(
    ("workload", "service", "message"),
    [
        (
            ("StatefulSet/nope",),
            (),
            "parts.workload: StatefulSet/nope is not in the chart (its workloads:"
            " Deployment/toolbox, StatefulSet/db)",
        ),
        # The right name, the wrong kind.
        (
            ("DaemonSet/db",),
            (),
            "parts.workload: DaemonSet/db is not in the chart (its workloads:"
            " Deployment/toolbox, StatefulSet/db)",
        ),
        (
            ("same",),
            (),
            "parts.workload: same names Deployment/same and StatefulSet/same in the chart:"
            " give Kind/name",
        ),
        ((), ("nope",), "parts.service: nope is not in the chart (its Services: db-headless)"),
    ],
)
def test_a_name_the_rendering_does_not_hold_names_the_key(
    workload: tuple[str, ...], service: tuple[str, ...], message: str
) -> None:
    objects = [
        _workload("Deployment", "toolbox", "toolbox"),
        _workload("StatefulSet", "db", "db"),
        _workload("Deployment", "same", "s1"),
        _workload("StatefulSet", "same", "s2"),
        _service("db-headless", {"app": "x", "component": "db"}, clusterIP="None"),
    ]
    if workload != ("same",):
        objects = [o for o in objects if o["metadata"]["name"] != "same"]
    with pytest.raises(PartNotFound) as raised:
        main_parts(objects, workload=workload, service=service, source="the chart")
    assert str(raised.value) == message


def _desired(objects: list[dict[str, Any]]) -> DesiredObjects:
    items = [
        DesiredObject(
            kind=o["kind"], name=o["metadata"]["name"], root=o["kind"].lower(), raw=o, defaulted=o
        )
        for o in objects
    ]
    return DesiredObjects(tuple(items))


def test_the_judge_reads_the_same_main_parts(tmp_path: Path) -> None:
    _, objects = _rendered(tmp_path)
    desired = _desired(objects)
    assert desired.workload is not None and desired.service is not None
    assert (desired.workload.kind, desired.workload.name) == ("StatefulSet", "rel-server")
    assert desired.service.name == "rel-server"
    named = desired.with_parts(("Deployment/rel-toolbox",), ("rel-server-headless",))
    assert named.workload is not None and named.service is not None
    assert (named.workload.kind, named.service.name) == ("Deployment", "rel-server-headless")
    # A name it does not hold (never so once a run checked it): the rule decides.
    unknown = desired.with_parts(("Deployment/gone",), ())
    assert unknown.workload is not None and unknown.workload.name == "rel-server"
