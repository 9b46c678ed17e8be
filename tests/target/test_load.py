"""Target files: good ones load with paths resolved and values merged; every bad one is one
line naming the file and the field, before anything is deployed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.approaches import load_target
from compare.errors import CompareError
from compare.target import merge_values

HEAD = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "app"}
CR = {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": "x"}}
CHART = {"chart": {"path": "chart"}}


def _operator(**given: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "install": {"alreadyInstalled": True},
        "resources": [CR],
        "ready": {"children": True},
    }
    spec.update(given)
    return {**HEAD, "operator": spec}


WEBAPP: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop"},
    "spec": {"replicas": 2, "image": "shop:v1"},
}


def _toolkit(*resources: Any) -> dict[str, Any]:
    spec = {"install": {"toolkit": True}, "resources": list(resources)}
    return {**HEAD, "operator": spec}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A target file's folder: a chart, a kustomize directory, values and resource files."""
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "Chart.yaml").write_text("name: chart\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "kust").mkdir()
    (tmp_path / "kust" / "kustomization.yaml").write_text("resources: []\n")
    (tmp_path / "a.yaml").write_text("image: {tag: a, repository: r}\nreplicas: 2\n")
    (tmp_path / "b.yaml").write_text("image: {tag: b}\nlabels: {x: '1'}\n")
    (tmp_path / "list.yaml").write_text("- 1\n")
    (tmp_path / "bad.yaml").write_text("a: [\n")
    (tmp_path / "noname.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    (tmp_path / "two.yaml").write_text(yaml.safe_dump_all([CR, {**CR, "metadata": {"name": "y"}}]))
    return tmp_path


def _write(folder: Path, data: Any) -> Path:
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


BAD: list[tuple[str, Any, str]] = [
    ("not a mapping", "- 1\n", "expected a Target mapping, got list"),
    ("empty", "", "expected a Target mapping, got NoneType"),
    (
        "two documents",
        "a: 1\n---\nb: 2\n",
        "holds 2 YAML documents (separated by ---); give exactly one per file",
    ),
    ("unknown top key", {**HEAD, **{"helm": CHART}, "colour": 1}, "colour: unknown field"),
    ("unknown helm key", {**HEAD, "helm": {**CHART, "colour": 1}}, "helm.colour: unknown field"),
    (
        "unknown chart key",
        {**HEAD, "helm": {"chart": {"path": "chart", "url": "x"}}},
        "helm.chart.url: unknown field",
    ),
    ("no approach", HEAD, "(root): name at least one approach: helm, operator, flux or argocd"),
    (
        "no name",
        {**{k: v for k, v in HEAD.items() if k != "name"}, "helm": CHART},
        "name: required field is missing",
    ),
    ("wrong kind", {**HEAD, "kind": "WebApp", "helm": CHART}, "kind: Input should be 'Target'"),
    (
        "wrong apiVersion",
        {**HEAD, "apiVersion": "v1", "helm": CHART},
        "apiVersion: Input should be 'compare.example.com/v1alpha1'",
    ),
    (
        "name not a string",
        {**HEAD, "name": 3, "helm": CHART},
        "name: Input should be a valid string (got int 3)",
    ),
    (
        "no chart form",
        {**HEAD, "helm": {"chart": {}}},
        "helm.chart: give exactly one of path | repo | oci (given: none)",
    ),
    (
        "two chart forms",
        {**HEAD, "helm": {"chart": {"path": "chart", "oci": "oci://r/x"}}},
        "helm.chart: give exactly one of path | repo | oci (given: oci, path)",
    ),
    (
        "repo without version",
        {**HEAD, "helm": {"chart": {"repo": "https://r", "name": "a"}}},
        "helm.chart: repo needs version too",
    ),
    (
        "name with oci",
        {**HEAD, "helm": {"chart": {"oci": "oci://r/x", "name": "a"}}},
        "helm.chart: name is not part of oci",
    ),
    (
        "version with path",
        {**HEAD, "helm": {"chart": {"path": "chart", "version": "1"}}},
        "helm.chart: version is not part of path (a directory has one version)",
    ),
    (
        "chart directory missing",
        {**HEAD, "helm": {"chart": {"path": "nope"}}},
        "helm.chart.path: nope is not a directory",
    ),
    (
        "chart directory without Chart.yaml",
        {**HEAD, "helm": {"chart": {"path": "empty"}}},
        "helm.chart.path: empty holds no Chart.yaml",
    ),
    (
        "values file missing",
        {**HEAD, "helm": {**CHART, "valuesFiles": ["a.yaml", "nope.yaml"]}},
        "helm.valuesFiles[1]: nope.yaml: no such file",
    ),
    (
        "values file not a mapping",
        {**HEAD, "helm": {**CHART, "valuesFiles": ["list.yaml"]}},
        "helm.valuesFiles[0]: list.yaml holds list, not a mapping of values",
    ),
    (
        "values file not YAML",
        {**HEAD, "flux": {**CHART, "valuesFiles": ["bad.yaml"]}},
        "flux.valuesFiles[0]: {folder}/bad.yaml: not valid YAML at line 2, column 1 (expected the "
        "node content, but found '<stream end>')",
    ),
    (
        "inline values not a mapping",
        {**HEAD, "helm": {**CHART, "values": [1]}},
        "helm.values: Input should be a valid dictionary (got list [1])",
    ),
    (
        "bad release",
        {**HEAD, "helm": {**CHART, "release": "Bad_Name"}},
        "helm.release: String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
    ),
    (
        "two install forms",
        _operator(install={"kustomize": "kust", "alreadyInstalled": True}),
        "operator.install: give exactly one of kustomize | chart | process | alreadyInstalled"
        " | toolkit (given: alreadyInstalled, kustomize)",
    ),
    (
        "process without a command",
        _operator(install={"process": {"command": []}}),
        "operator.install.process.command: List should have at least 1 item after validation,"
        " not 0",
    ),
    (
        "process program not on PATH",
        _operator(install={"process": {"command": ["no-such-operator-binary", "run"]}}),
        "operator.install.process.command[0]: no-such-operator-binary: not found on PATH",
    ),
    (
        "process program path missing",
        _operator(install={"process": {"command": ["bin/manager"]}}),
        "operator.install.process.command[0]: bin/manager: no executable file (relative to"
        " {folder})",
    ),
    (
        "process working directory missing",
        _operator(install={"process": {"command": ["python"], "workingDir": "nope"}}),
        "operator.install.process.workingDir: nope is not a directory",
    ),
    (
        "process crds missing",
        _operator(install={"process": {"command": ["python"], "crds": ["crd.yaml"]}}),
        "operator.install.process.crds[0]: crd.yaml: no such file or directory",
    ),
    (
        "process crds directory without manifests",
        _operator(install={"process": {"command": ["python"], "crds": ["empty"]}}),
        "operator.install.process.crds[0]: empty holds no *.yaml, *.yml or *.json",
    ),
    (
        "process crd without a name",
        _operator(install={"process": {"command": ["python"], "crds": ["noname.yaml"]}}),
        "operator.install.process.crds[0]: the ConfigMap has no metadata.name",
    ),
    (
        "process env not strings",
        _operator(install={"process": {"command": ["python"], "env": {"A": 1}}}),
        "operator.install.process.env.A: Input should be a valid string (got int 1)",
    ),
    (
        "alreadyInstalled false",
        _operator(install={"alreadyInstalled": False}),
        "operator.install.alreadyInstalled: Input should be True",
    ),
    (
        "kustomize directory without kustomization",
        _operator(install={"kustomize": "chart"}),
        "operator.install.kustomize: chart holds no kustomization.yaml",
    ),
    (
        "kustomize directory missing",
        _operator(install={"kustomize": "nope"}),
        "operator.install.kustomize: nope is not a directory",
    ),
    (
        "operator chart missing",
        _operator(install={"chart": {"chart": {"path": "nope"}}}),
        "operator.install.chart.chart.path: nope is not a directory",
    ),
    (
        "no resources",
        _operator(resources=[]),
        "operator.resources: List should have at least 1 item after validation, not 0",
    ),
    (
        "resource not a path or object",
        _operator(resources=[CR, 3]),
        "operator.resources: [1] must be a file path or an inline object (got int 3)",
    ),
    (
        "resource file missing",
        _operator(resources=["nope.yaml"]),
        "operator.resources[0]: nope.yaml: no such file",
    ),
    (
        "resource without a name",
        _operator(resources=["noname.yaml"]),
        "operator.resources[0]: the ConfigMap has no metadata.name",
    ),
    (
        "inline resource without kind",
        _operator(resources=[{"apiVersion": "v1"}]),
        "operator.resources[0]: the object has no kind",
    ),
    (
        "toolkit false",
        _operator(install={"toolkit": False}),
        "operator.install.toolkit: Input should be True",
    ),
    (
        "toolkit with a ready form",
        _operator(install={"toolkit": True}, resources=[WEBAPP]),
        "operator: ready is not part of install.toolkit (a WebApp is ready when Available)",
    ),
    (
        "no ready, not the toolkit",
        {**HEAD, "operator": {"install": {"alreadyInstalled": True}, "resources": [CR]}},
        "operator: ready: required field is missing (only install.toolkit goes without)",
    ),
    (
        "toolkit with another kind",
        _toolkit({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        "operator.resources[0]: install.toolkit takes WebApp (example.com/v1) resources, not "
        "ConfigMap (v1)",
    ),
    (
        "toolkit with a bad WebApp",
        _toolkit({**WEBAPP, "spec": {**WEBAPP["spec"], "replicas": "3"}}),
        "operator.resources[0]: spec.replicas: Input should be a valid integer (got str '3')",
    ),
    (
        "no ready form",
        _operator(ready={}),
        "operator.ready: give exactly one of condition | children (given: none)",
    ),
    (
        "ready children false",
        _operator(ready={"children": False}),
        "operator.ready.children: Input should be True",
    ),
    (
        "bad condition type",
        _operator(ready={"condition": "not ready"}),
        "operator.ready.condition: String should match pattern "
        "'^([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$'",
    ),
]


@pytest.mark.parametrize(
    ("content", "message"), [(c, m) for _, c, m in BAD], ids=[case for case, _, _ in BAD]
)
def test_a_bad_target_file_is_one_line_naming_file_and_field(
    folder: Path, content: Any, message: str
) -> None:
    path = _write(folder, content)
    with pytest.raises(CompareError) as caught:
        load_target(path)
    assert caught.value.message == f"{path}: {message.format(folder=folder)}"
    assert "\n" not in caught.value.message


def test_a_missing_target_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"^.*/nope\.yaml: no such file$"):
        load_target(tmp_path / "nope.yaml")


def test_paths_resolve_against_the_file_and_values_merge_in_order(folder: Path) -> None:
    sub = folder / "sub"
    sub.mkdir()
    data = {
        **HEAD,
        "namespace": "shop",
        "helm": {
            "chart": {"path": "../chart"},
            "valuesFiles": ["../a.yaml", "../b.yaml"],
            "values": {"replicas": 3, "labels": {"y": "2"}, "image": {"repository": None}},
        },
        "operator": {
            "install": {"chart": {"chart": {"oci": "oci://r.example/charts/op", "version": "1"}}},
            "resources": ["../two.yaml", CR],
            "ready": {"condition": "Available"},
        },
        "flux": {"chart": {"repo": "https://charts.example/", "name": "c", "version": "1.0.0"}},
    }
    (sub / "compare.yaml").write_text(yaml.safe_dump(data))
    # Loaded from another working directory: only the file's own folder counts.
    target = load_target(sub / "compare.yaml")
    assert target.name == "app" and target.namespace == "shop"
    helm, operator = target.chart_arm("helm"), target.operator_arm("operator")
    assert helm.chart.path == (folder / "chart").resolve()
    assert helm.release == "app"  # the target's name by default
    # Files in order, inline last; maps merge, null removes a key (helm's coalescing).
    assert helm.values == {
        "image": {"tag": "b"},
        "replicas": 3,
        "labels": {"x": "1", "y": "2"},
    }
    assert operator.install.form == "chart"
    assert operator.install.chart is not None
    assert operator.install.chart.chart.describe() == "oci://r.example/charts/op 1"
    assert operator.install.chart.where == "operator.install.chart"
    assert [r["metadata"]["name"] for r in operator.resources] == ["x", "y", "x"]
    assert operator.ready_condition == "Available"
    assert target.chart_arm("flux").chart.describe() == "c 1.0.0 from https://charts.example/"
    assert list(target.arms) == ["helm", "operator", "flux"]  # the registry's order
    with pytest.raises(CompareError, match=r"compare\.yaml: helm: not given"):
        load_target(_write(folder, {**HEAD, "flux": CHART})).arm("helm")


def test_a_chart_arms_drop_switches_are_its_own_in_one_order(folder: Path) -> None:
    both = {**CHART, "dropUnservedAPIServices": True, "dropUnservedWebhooks": True}
    data = {**HEAD, "helm": both, "flux": {**CHART, "dropUnservedAPIServices": True}}
    target = load_target(_write(folder, data))
    assert target.chart_arm("helm").drops == ("dropUnservedWebhooks", "dropUnservedAPIServices")
    assert target.chart_arm("flux").drops == ("dropUnservedAPIServices",)
    assert load_target(_write(folder, {**HEAD, "helm": CHART})).chart_arm("helm").drops == ()


def test_merge_values_never_changes_its_inputs() -> None:
    base = {"a": {"b": 1}}
    override = {"a": {"c": 2}}
    assert merge_values(base, override) == {"a": {"b": 1, "c": 2}}
    assert base == {"a": {"b": 1}} and override == {"a": {"c": 2}}


def test_the_toolkit_form_loads_webapps_ready_when_available(folder: Path) -> None:
    (folder / "webapps.yaml").write_text(
        yaml.safe_dump_all([WEBAPP, {**WEBAPP, "metadata": {"name": "cart"}}])
    )
    target = load_target(_write(folder, _toolkit("webapps.yaml")))
    operator = target.operator_arm("operator")
    assert operator is not None and operator.toolkit
    assert operator.install.form == "toolkit"
    assert operator.ready_condition == "Available"
    assert [w.name for w in operator.webapps] == ["shop", "cart"]
    assert [w.spec.replicas for w in operator.webapps] == [2, 2]
    assert [r["metadata"]["name"] for r in operator.resources] == ["shop", "cart"]


def test_the_process_form_runs_this_python_in_its_directory_after_its_manifests(
    folder: Path,
) -> None:
    # `python` is the interpreter running the toolkit; a path is relative to workingDir; the
    # manifests of a directory are read in name order, every document of each.
    (folder / "crds").mkdir()
    (folder / "crds" / "b.yaml").write_text(yaml.safe_dump({**CR, "metadata": {"name": "b"}}))
    (folder / "crds" / "a.yml").write_text(
        yaml.safe_dump_all([{**CR, "metadata": {"name": "a1"}}, {**CR, "metadata": {"name": "a2"}}])
    )
    (folder / "crds" / "notes.txt").write_text("not a manifest")
    (folder / "sub").mkdir()
    (folder / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (folder / "sub" / "run.sh").chmod(0o755)
    given = {"command": ["python", "-m", "op"], "env": {"A": "1"}, "crds": ["crds", "two.yaml"]}
    install = (
        load_target(_write(folder, _operator(install={"process": given})))
        .operator_arm("operator")
        .install
    )
    assert install.form == "process" and install.process is not None
    assert install.process.command == (sys.executable, "-m", "op")
    assert install.process.env == {"A": "1"} and install.process.working_dir == folder.resolve()
    names = [m["metadata"]["name"] for m in install.process.manifests]
    assert names == ["a1", "a2", "b", "x", "y"]
    script = {"command": ["./run.sh", "--flag"], "workingDir": "sub"}
    install = (
        load_target(_write(folder, _operator(install={"process": script})))
        .operator_arm("operator")
        .install
    )
    assert install.process is not None
    assert install.process.command == (str((folder / "sub" / "run.sh").resolve()), "--flag")
    assert install.process.working_dir == (folder / "sub").resolve()
