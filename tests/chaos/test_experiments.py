"""The experiment catalogue: valid for chaostoolkit itself, complete metadata, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from chaoslib import substitute
from typer.testing import CliRunner

from compare import approaches
from compare.chaos import discover
from compare.chaos.actions import _patch_arguments
from compare.chaos.fields import parse_path
from compare.cli import app
from compare.errors import CompareError
from compare.judge.kinds import PART_KINDS
from compare.paths import EXPERIMENTS_DIR
from compare.run.experiments import (
    CATALOGUE,
    configuration_defaults,
    load_experiments,
    load_spec,
    targets,
)

CHAOS = str(Path(sys.executable).parent / "chaos")
CONTRACT = ("webapp_namespace", "webapp_name", "webapp_approach", "webapp_app_file", "heal_window")
OWN = ("compare.chaos.actions", "compare.chaos.control_plane", "compare.chaos.probes")
DELETIONS = (
    "deployment-delete",
    "service-delete",
    "replicaset-delete",
    "configmap-delete",
    "secret-delete",
    "rbac-binding-delete",
    "service-stuck-terminating",
)
# Allowed changes: the judge sees no drift (expected: no-fault); the field still tracks them.
ALLOWED = ("annotation-add", "rollout-restart")
# Every file in experiments/ (the catalogue must list exactly these, see below).
FILES = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.json"))
# At least one fault per class of drift the closed-world judge sees, and one allowed change.
DRIFT_CLASSES = {
    "value changed": ("image-change", "resources-change", "probe-change"),
    "field removed": ("probe-remove",),
    "field added to the pod spec": ("pod-host-network", "volume-add", "container-add"),
    "field added to a container": ("container-command-add", "capability-add", "env-add"),
    "Deployment-level field": ("deployment-paused", "strategy-recreate", "min-ready-seconds"),
    "Service spec field": ("service-session-affinity", "service-port-change"),
    "object label": ("service-label-remove", "deployment-label-add"),
    "allowed change": ALLOWED,
    "pod changed in place": ("pod-image-in-place",),
    "object being deleted (a finalizer holds it)": ("service-stuck-terminating",),
    "allocated field that is no allocation": ("service-recreated-headless",),
    "foreign object the Service routes to": ("service-foreign-endpointslice",),
}
PROBES = ("desired_state_holds", "wait_for_desired_state")


def _file(name: str) -> str:
    """The built-in file itself: loads whether or not the catalogue lists the name yet."""
    return str(EXPERIMENTS_DIR / f"{name}.json")


def _activities(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The hypothesis probes, the method and the rollbacks."""
    hypothesis = doc.get("steady-state-hypothesis") or {}
    return [*hypothesis.get("probes", []), *doc["method"], *doc.get("rollbacks", [])]


def test_the_catalogue_is_exactly_the_files() -> None:
    assert set(FILES) == set(CATALOGUE)
    assert len(CATALOGUE) == len(set(CATALOGUE)) >= 24


def test_every_class_of_drift_has_a_fault() -> None:
    for drift_class, names in DRIFT_CLASSES.items():
        assert set(names) <= set(FILES), drift_class


# `chaos validate FILE` for every file in one process: the `chaos` script's own entry point
# (`chaostoolkit.__main__.cli`), called as the script calls it, once per file, its exit code
# and output kept per file. A process per file cost 1.5 s of CPU each (42 files, twice a CI).
# --no-version-check: no request to chaostoolkit's release server (a test has no network).
VALIDATE_EACH = """
import contextlib, io, json, sys
from chaostoolkit.__main__ import cli
found = {}
for path in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            cli.main(["--no-log-file", "--no-version-check", "validate", path], prog_name="chaos")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    found[path] = [code, out.getvalue()]
json.dump(found, sys.__stdout__)
"""


@pytest.fixture(scope="module")
def validated() -> dict[str, tuple[int, str]]:
    """Per experiment file: the exit code and output of `chaos validate` on it."""
    paths = [str(EXPERIMENTS_DIR / f"{name}.json") for name in FILES]
    done = subprocess.run(
        [sys.executable, "-c", VALIDATE_EACH, *paths],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {path: (code, output) for path, (code, output) in json.loads(done.stdout).items()}


@pytest.mark.parametrize("name", FILES)
def test_chaos_validate_accepts_every_experiment(
    name: str, validated: dict[str, tuple[int, str]]
) -> None:
    code, output = validated[str(EXPERIMENTS_DIR / f"{name}.json")]
    assert code == 0, output
    assert "experiment syntax and semantic look valid" in output


@pytest.mark.parametrize("name", FILES)
def test_every_experiment_states_its_fault_approaches_and_evidence(name: str) -> None:
    spec = load_spec(_file(name))
    doc = spec.document
    assert spec.builtin and spec.name == name
    assert spec.fault and spec.title == doc["title"]
    # As `chaos run` resolves them with the file's own defaults (the WebApp's parts).
    target, field = spec.evidence_for(configuration_defaults(doc["configuration"]))
    assert target in targets()
    assert f"target:{target}" in doc["tags"]
    # Which approaches it applies to is derived at discovery, never listed in the file.
    assert "approaches" not in _compare(doc) and "except-approaches" not in _compare(doc)
    assert not [t for t in doc["tags"] if t.startswith("approach:")]
    if field is not None:
        parse_path(field)
    # Deletions track the object itself (a new uid), drifts a field.
    assert (field is None) == (name in DELETIONS)
    if name in ALLOWED:
        # The trial engine takes the action's report of an annotation for no fault.
        assert field is not None and ".annotations[" in field
    # It says which kinds of the app's parts it applies to.
    assert spec.kinds and set(spec.kinds) <= set(PART_KINDS)
    method = doc["method"]
    injection = next(a for a in method if a["name"] == spec.injection)
    assert injection["type"] == "action"
    # The contract every experiment receives, each overridable from the environment.
    for key in CONTRACT:
        assert doc["configuration"][key]["type"] == "env", key
        assert "default" in doc["configuration"][key], key
    probes = doc["steady-state-hypothesis"]["probes"]
    probe = probes[-1]
    assert probe["provider"]["func"] == "desired_state_holds"
    assert probe["tolerance"] is True
    wait = method[-1]["provider"]
    assert wait["func"] == "wait_for_desired_state"
    assert wait["arguments"]["timeout"] == "${heal_window}"
    # The desired state depends on what deployed the app: every judging probe is told.
    judging = [
        a["provider"]
        for a in _activities(doc)
        if a["provider"].get("module") == "compare.chaos.probes"
        and a["provider"].get("func") in PROBES
    ]
    assert len(judging) >= 2
    for provider in judging:
        assert provider["arguments"]["approach"] == "${webapp_approach}", provider


def _doc(name: str) -> dict[str, Any]:
    """The file as JSON, without chaoslib's validation (that has its own test)."""
    doc: dict[str, Any] = json.loads(Path(_file(name)).read_text())
    return doc


def _compare(doc: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in doc["extensions"] if e["name"] == "compare")


PATCHED = [
    n
    for n in FILES
    if next(a for a in _doc(n)["method"] if a["name"] == _compare(_doc(n))["injection"])[
        "provider"
    ].get("func")
    == "patch_object"
    # The drifts around a stop of the operator's process are its own (tested below).
    and _compare(_doc(n))["evidence"]["target"] != "operator"
]


def test_the_new_drifts_use_the_generic_patch_action() -> None:
    assert len(PATCHED) >= 14
    assert set(PATCHED) >= {n for names in DRIFT_CLASSES.values() for n in names} - {
        "image-change",
        "container-add",
        "env-add",
        "service-port-change",
        # Their own actions: a field set when absent, never to its own value
        # (compare.chaos.choices), a pod patched in place, a delete held by a finalizer, a copy.
        "resources-change",
        "probe-change",
        "pod-image-in-place",
        "service-stuck-terminating",
        "service-recreated-headless",
        "service-foreign-endpointslice",  # adds an object
    }


@pytest.mark.parametrize("name", PATCHED)
def test_every_patch_is_well_formed_and_reports_the_tracked_field(name: str) -> None:
    doc = _doc(name)
    ext = _compare(doc)
    action = next(a for a in doc["method"] if a["name"] == ext["injection"])
    assert action["provider"]["module"] == "compare.chaos.actions"
    raw = action["provider"]["arguments"]
    # As chaoslib substitutes them with the file's defaults (the WebApp's parts).
    defaults = configuration_defaults(doc["configuration"])
    args = substitute(raw, defaults, {})
    # The same checks the action makes before it sends anything.
    kind, _ = _patch_arguments(args["kind"], args["patch"], args["field"], args["patch_type"])
    # The object is named through the app's parts (compare.run.workload), never the WebApp's.
    part = "${webapp_workload}" if kind == "deployment" else "${webapp_service}"
    assert raw["name"] == part and raw["ns"] == "${webapp_namespace}"
    assert '"webapp"' not in json.dumps(raw["patch"])  # the container by its variable
    assert f"target:{kind}" in doc["tags"]
    # Every registered approach: the block names none.
    assert "approaches" not in ext and "except-approaches" not in ext
    # The action reports the value of the very field the evidence tracks, for any app.
    assert ext["evidence"] == {"target": raw["kind"], "field": raw["field"]}
    # Not a copy of another experiment's words.
    others = [_doc(n) for n in FILES if n != name]
    assert doc["title"] not in {o["title"] for o in others}
    assert doc["description"] not in {o["description"] for o in others}


# Cells the policy deliberately leaves ungated (its comment says why: the verdict depends on
# how fast this machine restarts the API server against the operator's renew deadline, and on
# when helm-controller's watches are back).
# A managed value changed or removed: corrected by helm-controller at its next interval plus a
# rollout, too close to the 10 s window to gate.
FLUX_VALUES = (
    "image-change",
    "resources-change",
    "probe-change",
    "probe-remove",
    "label-change",
    "deployment-scale-zero",
    "service-selector-change",
    "service-label-remove",
)
# A pod-template value changed or removed (not the Service's: those it heals in about a second):
# Argo CD's self-heal plus a rollout, too close to the window to gate.
ARGOCD_VALUES = tuple(v for v in FLUX_VALUES if not v.startswith("service-"))
# The faults on a part the built-in WebApp has not (a target's), measured for the GitOps
# approaches on tests/fixtures/charts/stateful-app: a changed ConfigMap (and, Argo CD, Secret)
# value is put back too close to the window under load to gate.
UNGATED = (
    {
        ("apiserver-restart-drift", "operator"),
        ("apiserver-restart-drift", "flux"),
        ("apiserver-restart-drift", "argocd"),
        ("configmap-data-change", "flux"),
        ("configmap-data-change", "argocd"),
        ("secret-data-change", "argocd"),
    }
    | {(name, "flux") for name in FLUX_VALUES}
    | {(name, "argocd") for name in ARGOCD_VALUES}
)
# What helm-controller corrects well inside the window: a deleted object of the release (its
# ConfigMap, Secret and RoleBinding too); a StatefulSet's pod is Kubernetes' own heal. A
# changed Secret value it never corrects (its patch fails): does-not-heal.
PART_DELETES = {"configmap-delete", "secret-delete", "rbac-binding-delete"}
FLUX_HEALS = {"deployment-delete", "service-delete", "etcd-restart-drift", *PART_DELETES}
# What Argo CD's self-heal corrects well inside the window (measured): a deleted object it
# applied, a value of the Service the chart sets, the drift after an etcd restart.
ARGOCD_HEALS = FLUX_HEALS | {"service-selector-change", "service-label-remove"}


def test_the_policy_states_an_expectation_for_every_fault_and_approach() -> None:
    text = (EXPERIMENTS_DIR / "policy.yaml").read_text()
    policy = yaml.safe_load(text)
    rules = policy["expectations"]
    for name in FILES:
        for approach in load_spec(_file(name)).approaches:
            matching = [
                r["expect"]
                for r in rules
                if r["approach"] == approach
                and (
                    name in r["faults"]
                    if isinstance(r["faults"], list)
                    else name not in r.get("except", [])
                )
            ]
            if (name, approach) in UNGATED:
                assert matching == [], (name, approach, matching)
                assert f"{name} is not gated for the {approach}" in text
                continue
            assert len(matching) == 1, (name, approach, matching)
            if name in ALLOWED:
                assert matching == ["no-fault"], (name, approach)
            elif (approach, name) in {("flux", n) for n in FLUX_HEALS} | {
                ("argocd", n) for n in ARGOCD_HEALS
            }:
                assert matching == ["heals"], (name, approach)
            elif approach in ("helm", "flux", "argocd") and name not in (
                "pod-delete-one",
                "pod-delete-all",
                "replicaset-delete",
                "statefulset-pod-delete",
            ):
                assert matching == ["does-not-heal"], (name, approach)


def test_chaosk8s_activities_are_used_where_they_fit() -> None:
    modules = {
        name: load_spec(name).document["method"][0]["provider"]["module"]
        for name in (
            "pod-delete-one",
            "pod-delete-all",
            "deployment-delete",
            "service-delete",
            "replicaset-delete",
        )
    }
    assert all(module.startswith("chaosk8s.") for module in modules.values()), modules


def test_operator_down_drift_is_operator_only_and_exclusive() -> None:
    spec = load_spec("operator-down-drift")
    assert spec.approaches == ("operator",)
    assert spec.exclusive
    names = [a["name"] for a in spec.document["method"]]
    assert names[: names.index(spec.injection) + 2] == [
        "stop-operator",
        "scale-to-one",
        "start-operator",
    ]
    # Even when the method breaks off, the rollback starts the operator again.
    assert [a["name"] for a in spec.document["rollbacks"]] == ["start-operator"]
    # Its time includes the operator's restart: it runs alone in the run (measured alone, not
    # under the other trials' load), on any cluster (the operator is local).
    assert spec.scope == "cluster" and spec.cluster_wide and spec.requires == ()


# Faults of the cluster's own control plane: every trial on the cluster would feel them.
CONTROL_PLANE = {
    "apiserver-restart-drift": ("restart-kube-apiserver", "scale-to-one"),
    "etcd-restart-drift": ("restart-etcd", "change-image"),
    "controller-manager-down": ("stop-kube-controller-manager", "delete-all-pods"),
}


def test_exactly_the_faults_that_stop_something_shared_are_exclusive() -> None:
    exclusive = {s.name: s.scope for s in load_experiments() if s.exclusive}
    assert exclusive == {
        "operator-down-drift": "cluster",
        "operator-kill-drift": "cluster",
        **dict.fromkeys(CONTROL_PLANE, "cluster"),
    }


@pytest.mark.parametrize("name", sorted(CONTROL_PLANE))
def test_a_control_plane_fault_runs_alone_needs_the_embedded_cluster_and_restores_it(
    name: str,
) -> None:
    spec = load_spec(name)
    assert spec.cluster_wide and spec.requires == ("embedded-cluster",)
    assert spec.unmet(embedded=True) is None
    assert "needs the embedded cluster" in (spec.unmet(embedded=False) or "")
    assert spec.approaches == approaches.names()
    fault, injection = CONTROL_PLANE[name]
    method = spec.document["method"]
    # The control-plane fault first, then the drift (the timed injection), then the wait.
    assert [a["name"] for a in method] == [fault, injection, "wait-for-desired-state"]
    assert spec.injection == injection
    assert method[0]["provider"]["module"] == "compare.chaos.control_plane"
    # On another cluster the hypothesis fails before the method: `chaos run` injects nothing.
    first = spec.document["steady-state-hypothesis"]["probes"][0]
    assert first["provider"]["func"] == "embedded_control_plane_runs"
    assert first["tolerance"] is True
    # Whatever happened, the rollback starts every component that is not running.
    (rollback,) = spec.document["rollbacks"]
    assert rollback["provider"]["func"] == "start_control_plane"


def test_operator_kill_drift_kills_the_operator_right_after_the_drift() -> None:
    spec = load_spec("operator-kill-drift")
    assert spec.approaches == ("operator",) and spec.exclusive and spec.cluster_wide
    assert spec.requires == ()
    method = spec.document["method"]
    assert [a["name"] for a in method] == [
        "scale-to-one",
        "kill-operator",
        "start-operator",
        "wait-for-desired-state",
    ]
    assert spec.injection == "scale-to-one"
    assert method[1]["provider"]["arguments"] == {"kill": True}
    # The drift acts on the app's workload, a Deployment or a StatefulSet (an operator's).
    scale = method[0]["provider"]
    assert scale["func"] == "patch_object" and scale["arguments"]["patch"] == {
        "spec": {"replicas": 1}
    }
    assert spec.kinds == ("Deployment", "StatefulSet")
    assert spec.target == "operator" and scale["arguments"]["kind"] == "${webapp_workload_kind}"
    assert [a["name"] for a in spec.document["rollbacks"]] == ["start-operator"]


def _write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _valid() -> dict[str, object]:
    return json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("method"), "an experiment requires a method"),
        (lambda d: d.pop("description"), "experiment requires a description"),
        (
            lambda d: d["method"][0]["provider"].update(func="nope"),
            "does not expose a function called 'nope'",
        ),
        (
            lambda d: d["method"][0]["provider"]["arguments"].update(colour="red"),
            "argument 'colour' is not part of the function signature",
        ),
        (
            lambda d: d["extensions"][0]["evidence"].update(target="cluster"),
            "extensions[compare].evidence.target: 'cluster' is not one of",
        ),
        (
            lambda d: d["extensions"][0]["evidence"].update(field="spec.replicas"),
            "extensions[compare].evidence.field: field path 'spec.replicas'",
        ),
        (
            lambda d: d["extensions"][0].update(approaches=["kustomize"]),
            "extensions[compare].approaches: unknown approach 'kustomize'",
        ),
        (
            lambda d: d["extensions"][0].update({"except-approaches": ["kustomize"]}),
            "extensions[compare].except-approaches: unknown approach 'kustomize'",
        ),
        (
            lambda d: d["extensions"][0].update({"except-approaches": list(approaches.names())}),
            "extensions[compare].except-approaches: leaves no approach",
        ),
        (
            lambda d: d["extensions"][0].update(
                {"approaches": ["helm"], "except-approaches": ["flux"]}
            ),
            "extensions[compare].except-approaches: give either approaches",
        ),
        (
            lambda d: d["extensions"][0].update({"except-approaches": "flux"}),
            "extensions[compare].except-approaches: must be a list, got",
        ),
        (
            lambda d: d["extensions"][0].update(injection="nothing"),
            "extensions[compare].injection: no method activity named 'nothing'",
        ),
        (
            lambda d: d["extensions"][0].update(exclusive="yes"),
            "extensions[compare].exclusive: must be true or false",
        ),
        (
            lambda d: d["extensions"][0].update(exclusive=True, scope="namespace"),
            "extensions[compare].scope: 'namespace' is not one of approach, cluster",
        ),
        (
            lambda d: d["extensions"][0].update(scope="cluster"),
            'extensions[compare].scope: cluster needs "exclusive": true',
        ),
        (
            lambda d: d["extensions"][0].update(requires=["a-gpu"]),
            "extensions[compare].requires: must be a list of embedded-cluster",
        ),
    ],
)
def test_a_malformed_experiment_is_one_line_naming_the_file(
    tmp_path: Path, change: object, message: str
) -> None:
    doc = _valid()
    change(doc)  # type: ignore[operator]
    path = _write(tmp_path, "mine.json", doc)
    with pytest.raises(CompareError) as info:
        load_spec(str(path))
    text = str(info.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    assert "\n" not in text


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.json", '{\n  "title": "x",\n  oops\n}')
    with pytest.raises(CompareError, match=r"broken.json: not valid JSON \(line 3, column 3"):
        load_spec(str(path))


def test_unknown_names_and_files() -> None:
    with pytest.raises(CompareError, match=r"not a built-in experiment .*known: pod-delete-one"):
        load_spec("pod-delete-some")
    with pytest.raises(CompareError, match=r"^/nowhere/x\.json: no such file"):
        load_spec("/nowhere/x.json")
    with pytest.raises(CompareError, match="'env-add' is given twice"):
        load_experiments(["env-add", str(EXPERIMENTS_DIR / "env-add.json")])


def test_compare_run_rejects_a_malformed_experiment_before_touching_a_cluster(
    tmp_path: Path,
) -> None:
    # The kubeconfig does not exist: reaching the cluster would fail with another message.
    path = _write(tmp_path, "bad.json", {"title": "t", "description": "d"})
    result = CliRunner().invoke(
        app,
        ["run", "--experiment", str(path), "--kubeconfig", str(tmp_path / "none.yaml")],
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert f"{path}: method: an experiment requires a method" in lines[0]
    assert "Traceback" not in result.output


def test_compare_run_rejects_an_unreachable_cluster_in_one_line(tmp_path: Path) -> None:
    kubeconfig = _write(
        tmp_path,
        "kubeconfig.yaml",
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        ),
    )
    result = CliRunner().invoke(app, ["run", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "unreachable" in lines[0]


def test_discover_lists_the_extension_activities() -> None:
    found = discover(discover_system=False)
    listed = {(a["mod"], a["name"], a["type"]) for a in found["activities"]}
    assert ("compare.chaos.actions", "set_container_image", "action") in listed
    assert ("compare.chaos.actions", "stop_operator", "action") in listed
    # The faults beyond the WebApp (ConfigMap, Secret, StatefulSet pod, RBAC binding).
    for name in ("change_data", "delete_object", "delete_statefulset_pod", "add_endpoint_slice"):
        assert ("compare.chaos.actions", name, "action") in listed
    assert ("compare.chaos.control_plane", "restart_control_plane_component", "action") in listed
    assert ("compare.chaos.control_plane", "start_control_plane", "action") in listed
    assert ("compare.chaos.probes", "desired_state_holds", "probe") in listed
    assert {mod for mod, _, _ in listed} == set(OWN)


def test_chaos_discover_finds_the_extension(tmp_path: Path) -> None:
    out = tmp_path / "discovery.json"
    done = subprocess.run(
        [
            CHAOS,
            "--no-log-file",
            "discover",
            "--no-install",
            "--no-system-info",
            "--discovery-path",
            str(out),
            "helm-vs-operator",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    names = {a["name"] for a in json.loads(out.read_text())["activities"]}
    assert {"set_service_selector", "wait_for_desired_state", "start_operator"} <= names
    assert {"restart_control_plane_component", "stop_control_plane_component"} <= names


# The experiments that apply to some approaches only: those on a part of an approach itself,
# derived from what the approaches declare (`Approach.fault_targets`: the operator's process);
# the rest apply to every registered approach (whether its app has the part they act on is
# the run's to decide).
RESTRICTED = {
    "operator-down-drift": ("operator",),
    "operator-kill-drift": ("operator",),
}


@pytest.mark.parametrize("name", FILES)
def test_a_file_without_approaches_loads_as_the_old_full_list_did(
    name: str, tmp_path: Path
) -> None:
    """No file lists its approaches (33 listed every one, 8 a part): loaded with the list put
    back that gives the same approaches (every registered one, or those that declare the
    part it acts on), each gives the very same spec."""
    spec = load_spec(_file(name))
    assert spec.approaches == RESTRICTED.get(name, approaches.names())
    doc = _doc(name)
    ext = _compare(doc)
    ext["approaches"] = list(spec.approaches)
    old = tmp_path / f"{name}.json"
    old.write_text(json.dumps(doc))
    before = load_spec(str(old))
    _compare(before.document).pop("approaches")
    # The same spec, but for how its approaches were chosen (the reason a left-out one gets).
    assert before.chosen_by == "approaches"
    assert replace(before, path=spec.path, builtin=True, chosen_by="") == spec


def test_except_approaches_leaves_out_the_approaches_it_names(tmp_path: Path) -> None:
    doc = _doc("env-add")
    _compare(doc)["except-approaches"] = ["operator"]
    path = tmp_path / "env-add-but-operator.json"
    path.write_text(json.dumps(doc))
    spec = load_spec(str(path))
    assert spec.approaches == tuple(a for a in approaches.names() if a != "operator")
    assert "operator" not in spec.approaches and "helm" in spec.approaches
