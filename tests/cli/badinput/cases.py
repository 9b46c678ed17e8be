"""The table of bad inputs: every case is a command line, the files it reads, the exit code
and a fragment the one-line error must contain (naming the field or the file).

`{tmp}` in an argument is the case's own directory. A file's content is text, bytes, a dict
(written as YAML, or JSON for `.json`) or one of the SPECIAL markers (a FIFO, a directory, the
path of /dev/zero). Commands that would reach a cluster get `--kubeconfig {tmp}/no-cluster`:
a case whose input is wrongly accepted then fails on that file instead of deploying, and the
expected fragment (never about the kubeconfig) does not match.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import yaml

from compare.paths import EXPERIMENTS_DIR
from compare.results.migrate import upgrade

# Re-exported: the tests import them from here.
from tests.cli.badinput.common import DEV_ZERO as DEV_ZERO
from tests.cli.badinput.common import DIRECTORY as DIRECTORY
from tests.cli.badinput.common import FIFO as FIFO
from tests.cli.badinput.common import NO_CLUSTER as NO_CLUSTER
from tests.cli.badinput.common import SYMLINK as SYMLINK
from tests.cli.badinput.common import VALID_APP as VALID_APP
from tests.cli.badinput.common import Case as Case
from tests.cli.badinput.sweep import sweep_cases
from tests.cli.badinput.third import third_sweep_cases
from tests.results.helpers import fixture


def _app(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = copy.deepcopy(VALID_APP)
    change(doc)
    return doc


def _spec(**values: Any) -> dict[str, Any]:
    return _app(lambda d: d["spec"].update(values))


def _drop(where: str, key: str) -> dict[str, Any]:
    def change(doc: dict[str, Any]) -> None:
        (doc if where == "" else doc[where]).pop(key)

    return _app(change)


def _meta(**values: Any) -> dict[str, Any]:
    return _app(lambda d: d["metadata"].update(values))


def _res(requests: dict[str, Any], limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return _spec(resources=resources)


# (id, content of app.yaml, fragment of the error after the file name)
BAD_APPS: list[tuple[str, Any, str]] = [
    ("replicas-string", _spec(replicas="3"), "spec.replicas: Input should be a valid integer"),
    ("replicas-bool", _spec(replicas=True), "spec.replicas: Input should be a valid integer"),
    ("replicas-float", _spec(replicas=3.5), "spec.replicas: Input should be a valid integer"),
    ("replicas-word", _spec(replicas="three"), "spec.replicas: Input should be a valid integer"),
    ("replicas-null", _spec(replicas=None), "spec.replicas: Input should be a valid integer"),
    ("replicas-negative", _spec(replicas=-1), "spec.replicas: Input should be greater than"),
    ("replicas-ceiling", _spec(replicas=51), "spec.replicas: 51 exceeds the ceiling of 50"),
    ("port-string", _spec(port="8080"), "spec.port: Input should be a valid integer"),
    ("port-bool", _spec(port=True), "spec.port: Input should be a valid integer"),
    ("port-float", _spec(port=8080.0), "spec.port: Input should be a valid integer"),
    ("port-null", _spec(port=None), "spec.port: Input should be a valid integer"),
    ("port-zero", _spec(port=0), "spec.port: Input should be greater than or equal to 1"),
    ("port-high", _spec(port=70000), "spec.port: Input should be less than or equal to 65535"),
    ("image-missing", _drop("spec", "image"), "spec.image: required field is missing"),
    ("image-empty", _spec(image=""), "spec.image: String should have at least 1 character"),
    ("image-upper", _spec(image="Shop:v1"), "spec.image: 'Shop:v1' is not a valid image"),
    ("image-space", _spec(image="shop v1"), "spec.image: 'shop v1' is not a valid image"),
    ("image-number", _spec(image=123), "spec.image: Input should be a valid string"),
    ("image-long", _spec(image="a" * 300), "spec.image: String should have at most 255"),
    ("env-mapping", _spec(env={"A": "1"}), "spec.env: Input should be a valid list"),
    ("env-no-name", _spec(env=[{"value": "1"}]), "spec.env[0].name: required field is missing"),
    ("env-bad-name", _spec(env=[{"name": "1X"}]), "spec.env[0].name: String should match"),
    ("env-int-value", _spec(env=[{"name": "A", "value": 8080}]), "spec.env[0].value: Input"),
    ("env-bool-value", _spec(env=[{"name": "A", "value": True}]), "spec.env[0].value: Input"),
    ("env-duplicate", _spec(env=[{"name": "A"}, {"name": "A"}]), "spec.env: duplicate env"),
    ("env-reserved", _spec(env=[{"name": "PORT"}]), "spec.env: 'PORT' is reserved"),
    (
        "env-reserved-prefix",
        _spec(env=[{"name": "KUBERNETES_X"}]),
        "spec.env: 'KUBERNETES_X' is reserved",
    ),
    (
        "env-too-many",
        _spec(env=[{"name": f"V{i}"} for i in range(65)]),
        "spec.env: List should have at most 64 items",
    ),
    ("env-unknown-key", _spec(env=[{"name": "A", "from": "x"}]), "spec.env[0].from: unknown"),
    ("cpu-word", _res({"cpu": "lots"}), "spec.resources.requests.cpu: String should match"),
    ("cpu-int", _res({"cpu": 1}), "spec.resources.requests.cpu: Input should be a valid string"),
    ("cpu-negative", _res({"cpu": "-1"}), "spec.resources.requests.cpu: String should match"),
    (
        "cpu-request-over-limit",
        _res({"cpu": "500m"}, {"cpu": "250m"}),
        "spec.resources: resources.limits.cpu must be >= resources.requests.cpu",
    ),
    (
        "cpu-request-over-limit-units",
        _res({"cpu": "2"}, {"cpu": "1500m"}),
        "spec.resources: resources.limits.cpu must be >= resources.requests.cpu",
    ),
    (
        "memory-request-over-limit",
        _res({"memory": "1Gi"}, {"memory": "1000Mi"}),
        "spec.resources: resources.limits.memory must be >= resources.requests.memory",
    ),
    ("resources-gpu", _res({"gpu": "1"}), "spec.resources.requests.gpu: unknown field"),
    ("resources-unknown", _spec(resources={"claims": []}), "spec.resources.claims: unknown"),
    ("spec-unknown", _spec(replica=2), "spec.replica: unknown field"),
    ("spec-missing", _drop("", "spec"), "spec: required field is missing"),
    ("spec-list", _app(lambda d: d.update(spec=[1])), "spec: Input should be a valid"),
    ("kind-deployment", _app(lambda d: d.update(kind="Deployment")), "kind: String should"),
    ("api-v2", _app(lambda d: d.update(apiVersion="example.com/v2")), "apiVersion: String"),
    ("api-missing", _drop("", "apiVersion"), "apiVersion: required field is missing"),
    ("metadata-missing", _drop("", "metadata"), "metadata: required field is missing"),
    ("name-missing", _app(lambda d: d.update(metadata={})), "metadata.name: required field"),
    ("name-upper", _meta(name="Shop_1"), "metadata.name: String should match pattern"),
    ("name-digit-first", _meta(name="1shop"), "metadata.name: String should match pattern"),
    ("name-long", _meta(name="s" * 54), "metadata.name: String should have at most 53"),
    ("name-int", _meta(name=123), "metadata.name: Input should be a valid string"),
    ("namespace-bad", _meta(namespace="Bad_NS"), "metadata.namespace: String should match"),
    ("top-list", "- a\n- b\n", "expected a WebApp mapping, got list"),
    ("empty", "", "expected a WebApp mapping, got NoneType"),
    ("scalar", "hello\n", "expected a WebApp mapping, got str"),
    ("yaml-syntax", "spec: [unclosed\n", "not valid YAML at line 2"),
    ("yaml-indent", "kind: WebApp\n  bad: indent\n", "not valid YAML at line 2"),
    ("multi-document", "kind: WebApp\n---\nkind: WebApp\n", "holds 2 YAML documents"),
    ("not-utf8", b"kind: WebApp\nmetadata: {name: \xff}\n", "not UTF-8 text"),
    ("dev-zero", DEV_ZERO, "not a regular file"),
    ("fifo", FIFO, "not a regular file"),
    ("directory", DIRECTORY, "DIR"),
    ("missing", None, "no such file"),
    ("too-large", "# " + "x" * (1024 * 1024 + 10) + "\n", "larger than 1 MiB"),
]

# (id, content of values.yaml, fragment)
BAD_VALUES: list[tuple[str, Any, str]] = [
    ("not-utf8", b"podLabels: {a: \xfe}\n", "not UTF-8 text"),
    ("yaml-syntax", "probes: [\n", "not valid YAML"),
    ("multi-document", "a: 1\n---\nb: 2\n", "holds 2 YAML documents"),
    ("top-list", "- 1\n", "expected a mapping of chart values, got list"),
    ("scalar", "42\n", "expected a mapping of chart values, got int"),
    ("owned-image", {"image": "other:v1"}, "image is set from the WebApp manifest"),
    ("owned-replicas", {"replicaCount": 3}, "replicaCount is set from the WebApp manifest"),
    ("owned-port", {"port": 80}, "port is set from the WebApp manifest"),
    ("owned-fullname", {"fullnameOverride": "x"}, "fullnameOverride is set from the WebApp"),
    ("unknown-key", {"replicas": 3}, "replicas: unknown key"),
    ("pull-policy", {"imagePullPolicy": "Sometimes"}, "imagePullPolicy"),
    ("probe-type", {"probes": {"type": "exec"}}, "probes"),
    ("probe-enabled-string", {"probes": {"enabled": "true"}}, "probes"),
    ("probe-path", {"probes": {"path": "health"}}, "probes"),
    ("own-pod-label", {"podLabels": {"app.kubernetes.io/name": "x"}}, "podLabels"),
    ("pod-label-long", {"podLabels": {"team": "x" * 64}}, "podLabels.team"),
    ("run-as-negative", {"securityContext": {"runAsUser": -1}}, "securityContext.runAsUser"),
    ("privileged-string", {"securityContext": {"privileged": "yes"}}, "securityContext"),
    ("capabilities-string", {"securityContext": {"capabilities": "ALL"}}, "securityContext"),
    ("tolerations-map", {"tolerations": {"key": "x"}}, "tolerations"),
    ("node-selector-int", {"nodeSelector": {"disk": 1}}, "nodeSelector.disk"),
    ("test-image", {"tests": {"image": "BAD IMAGE"}}, "tests"),
    ("name-override", {"nameOverride": "Bad_Name"}, "nameOverride"),
    ("dev-zero", DEV_ZERO, "not a regular file"),
    ("fifo", FIFO, "not a regular file"),
    ("directory", DIRECTORY, "DIR"),
    ("missing", None, "no such file"),
    ("too-large", "# " + "x" * (1024 * 1024 + 10) + "\n", "larger than 1 MiB"),
]


def _experiment() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    return doc


def _ext(**values: Any) -> dict[str, Any]:
    doc = _experiment()
    doc["extensions"][0].update(values)
    return doc


def _exp(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = _experiment()
    change(doc)
    return doc


def _probe_as_injection(doc: dict[str, Any]) -> None:
    probe_name = next(a["name"] for a in doc["method"] if a["type"] == "probe")
    doc["extensions"][0]["injection"] = probe_name


def _method(index: int, **values: Any) -> dict[str, Any]:
    return _exp(lambda d: d["method"][index].update(values))


def _tolerance(tolerance: Any) -> dict[str, Any]:
    return _exp(lambda d: d["steady-state-hypothesis"]["probes"][0].update(tolerance=tolerance))


def _paused_by_configuration(doc: dict[str, Any]) -> None:
    doc["configuration"]["slow"] = 100000
    doc["method"][0]["pauses"] = {"after": "${slow}"}


def _duplicate_name(doc: dict[str, Any]) -> None:
    doc["method"][1]["name"] = doc["method"][0]["name"]


def _control(control: dict[str, Any]) -> dict[str, Any]:
    return _exp(lambda d: d.update(controls=[control]))


def _yaml_with_infinite_pause() -> str:
    text = yaml.safe_dump(_method(0, pauses={"after": 1.5}))
    assert text.count("after: 1.5") == 1
    return text.replace("after: 1.5", "after: .inf")


X = "extensions[compare]"
M = "method[0]"
T = "steady-state-hypothesis.probes[0].tolerance"
# (id, content of mine.json, fragment)
BAD_EXPERIMENTS: list[tuple[str, Any, str]] = [
    ("unknown-key", _ext(injecton="change-image"), f"{X}.injecton: unknown key"),
    ("exclusive-string", _ext(exclusive="false"), f"{X}.exclusive: must be true or false"),
    ("exclusive-number", _ext(exclusive=0), f"{X}.exclusive: must be true or false"),
    ("fault-number", _ext(fault=42), f"{X}.fault: must be a non-empty string"),
    ("fault-empty", _ext(fault=" "), f"{X}.fault: must be a non-empty string"),
    ("evidence-string", _ext(evidence="deployment"), f"{X}.evidence: must be an object"),
    ("evidence-list", _ext(evidence=["deployment"]), f"{X}.evidence: must be an object"),
    ("evidence-target-int", _ext(evidence={"target": 1}), f"{X}.evidence.target: must be"),
    ("evidence-unknown", _ext(evidence={"kind": "x"}), f"{X}.evidence.kind: unknown key"),
    ("evidence-target", _ext(evidence={"target": "cluster"}), f"{X}.evidence.target: 'cluster'"),
    ("evidence-field", _ext(evidence={"field": "spec.replicas"}), f"{X}.evidence.field:"),
    ("extensions-object", _exp(lambda d: d.update(extensions={"name": "compare"})), "extensions:"),
    ("extensions-string", _exp(lambda d: d.update(extensions="compare")), "extensions:"),
    (
        "two-blocks",
        _exp(lambda d: d["extensions"].append({"name": "compare"})),
        "extensions: 2 blocks named 'compare'",
    ),
    ("approaches-string", _ext(approaches="helm"), f"{X}.approaches: must be a non-empty list"),
    ("approaches-empty", _ext(approaches=[]), f"{X}.approaches: must be a non-empty list"),
    ("approaches-unknown", _ext(approaches=["kustomize"]), f"{X}.approaches: unknown approach"),
    ("approaches-int", _ext(approaches=[1]), f"{X}.approaches[0]: must be a string"),
    ("injection-int", _ext(injection=5), f"{X}.injection: must be the name of a method action"),
    ("injection-probe", _exp(_probe_as_injection), f"{X}.injection: 'wait-for-desired-state'"),
    ("injection-unknown", _ext(injection="nothing"), f"{X}.injection: no method activity"),
    ("scope-unknown", _ext(exclusive=True, scope="namespace"), f"{X}.scope: 'namespace'"),
    ("scope-needs-exclusive", _ext(scope="cluster"), f"{X}.scope: cluster needs"),
    ("requires-string", _ext(requires="embedded-cluster"), f"{X}.requires: must be a list"),
    ("requires-unknown", _ext(requires=["a-gpu"]), f"{X}.requires: must be a list of"),
    # Every number in its range (issue 37): pauses 0..600 s, timeouts above 0 up to 3600 s.
    ("pause-after-huge", _method(0, pauses={"after": 100000}), f"{M}.pauses.after: 100000 s"),
    ("pause-before-negative", _method(0, pauses={"before": -1}), f"{M}.pauses.before: -1 s"),
    ("pause-by-configuration", _exp(_paused_by_configuration), f"{M}.pauses.after: 100000 s"),
    ("pause-word", _method(0, pauses={"after": "soon"}), f"{M}.pauses.after: must be a number"),
    (
        "pause-unknown-key",
        _method(0, pauses={"after": "${nope}"}),
        f"{M}.pauses.after: ${{nope}} names no configuration",
    ),
    ("pause-bool", _method(0, pauses={"after": True}), f"{M}.pauses.after: must be a number"),
    ("pause-other-key", _method(0, pauses={"during": 1}), f"{M}.pauses.during: unknown key"),
    ("timeout-zero", _method(0, timeout=0), f"{M}.timeout: 0 s is out of range"),
    ("timeout-negative", _method(0, timeout=-5), f"{M}.timeout: -5 s is out of range"),
    ("timeout-huge", _method(0, timeout=1e9), f"{M}.timeout: 1e+09 s is more than the maximum"),
    ("timeout-string", _method(0, timeout="10"), f"{M}.timeout: must be a number of seconds"),
    ("duplicate-name", _exp(_duplicate_name), "method[1].name: 'change-image' is the name of"),
    ("regex-nested", _tolerance({"type": "regex", "pattern": "(a+)+$"}), f"{T}.pattern:"),
    (
        "regex-long",
        _tolerance({"type": "regex", "pattern": "a" * 600}),
        f"{T}.pattern: longer than 512",
    ),
    (
        "regex-invalid",
        _tolerance({"type": "regex", "pattern": "(a"}),
        f"{T}.pattern: not a valid regex",
    ),
    ("range-reversed", _tolerance({"type": "range", "range": [5, 1]}), f"{T}.range: 5 is above"),
    ("tolerance-type", _tolerance({"type": "magic"}), f"{T}.type: 'magic' is not one of"),
    ("kinds-empty", _ext(kinds=[]), f"{X}.kinds: must list at least one kind"),
    (
        "skip-when-no-reason",
        _ext(**{"skip-when": [{"field": "service.spec.type", "values": ["NodePort"]}]}),
        f'{X}.skip-when[0]: must be an object with exactly "field", "values" and "reason"',
    ),
    (
        "skip-when-no-values",
        _ext(**{"skip-when": [{"field": "service.spec.type", "values": [], "reason": "r"}]}),
        f"{X}.skip-when[0].values: must be a non-empty list",
    ),
    ("activity-type", _method(0, type="fault"), f"{M}.type: must be probe or action"),
    ("activity-name-empty", _method(0, name=" "), f"{M}.name: an activity must have a non"),
    (
        "module-not-dotted",
        _method(0, provider={"type": "python", "module": "a/b", "func": "f"}),
        f"{M}.provider.module",
    ),
    ("http-no-url", _method(0, provider={"type": "http"}), f"{M}.provider.url"),
    (
        "control-no-module",
        _control({"name": "c", "provider": {"type": "python"}}),
        "controls[0].provider.module: must name a module",
    ),
    (
        "control-scope",
        _control({"name": "c", "scope": "during", "provider": {"type": "python", "module": "m"}}),
        "controls[0].scope: must be before or after",
    ),
    ("control-ref-unknown", _control({"ref": "nothing"}), "controls[0].ref: no control is named"),
    ("method-missing", _exp(lambda d: d.pop("method")), "method: an experiment requires a method"),
    ("title-missing", _exp(lambda d: d.pop("title")), "title: experiment requires a title"),
    ("not-json", "{ nope", "not valid JSON"),
    ("top-list", "[1, 2]", "an experiment must be a mapping"),
    ("not-utf8", b'{"title": "\xff"}', "not UTF-8 text"),
    ("too-large", '{"title": "' + "x" * (1024 * 1024) + '"}', "larger than 1 MiB"),
]

# (id, content of policy.yaml, fragment)
BAD_POLICIES: list[tuple[str, Any, str]] = [
    ("approach-unknown", {"approach": "kustomize"}, "expectations[0].approach: unknown approach"),
    ("faults-string", {"faults": "pod-delete-one"}, "expectations[0].faults: must be `all`"),
    ("expect-unknown", {"expect": "maybe"}, "expectations[0].expect"),
    ("within-negative", {"within": -1}, "expectations[0].within"),
    ("within-string", {"within": "5"}, "expectations[0].within"),
    ("optional-string", {"optional": "no"}, "expectations[0].optional"),
    ("unknown-key", {"expects": "heals"}, "expectations[0].expects"),
    ("statistic-unknown", {"statistic": "mean"}, "expectations[0].statistic"),
    (
        "within-not-heals",
        {"expect": "does-not-heal", "within": 5},
        "expectations[0]: `within` only applies",
    ),
    (
        "except-not-all",
        {"except": ["pod-delete-one"]},
        "expectations[0]: `except` only applies to `faults: all`",
    ),
]
_RULE = {"approach": "helm", "faults": ["pod-delete-one"], "expect": "heals"}
BAD_POLICY_FILES: list[tuple[str, Any, str]] = [
    ("version-2", {"version": 2, "expectations": [_RULE]}, "version 2 is not supported"),
    ("version-missing", {"expectations": [_RULE]}, "version: required field is missing"),
    ("expectations-empty", {"version": 1, "expectations": []}, "expectations"),
    ("top-list", "- 1\n", "expected a mapping with version and expectations"),
    ("yaml-syntax", "version: [\n", "not valid YAML"),
    ("multi-document", "version: 1\n---\nversion: 1\n", "holds 2 YAML documents"),
    ("not-utf8", b"version: 1\nexpectations: \xff\n", "not UTF-8 text"),
    ("dev-zero", DEV_ZERO, "not a regular file"),
    ("fifo", FIFO, "not a regular file"),
    ("missing", None, "not found"),
    (
        "contradiction",
        {"version": 1, "expectations": [_RULE, {**_RULE, "expect": "does-not-heal"}]},
        "(top level): expectations[0] and expectations[1] contradict each other",
    ),
    (
        "bool-key",
        "version: 1\nyes: 2\nexpectations: []\n",
        "(top level).True: keys must be strings",
    ),
]

# (id, content of results.json, fragment)
BAD_RESULTS: list[tuple[str, Any, str]] = [
    ("not-json", "{ nope", "not valid JSON"),
    ("top-list", "[]", "expected a JSON object, got"),
    ("version-99", '{"schemaVersion": 99}', "schemaVersion 99 is not supported"),
    ("version-missing", "{}", "schemaVersion: required field is missing"),
    ("version-bool", '{"schemaVersion": true}', "schemaVersion true is not supported"),
    ("not-utf8", b'{"schemaVersion": "\xff"}', "not UTF-8 text"),
    ("dev-zero", DEV_ZERO, "not a regular file"),
    ("fifo", FIFO, "not a regular file"),
    ("fields-missing", '{"schemaVersion": 2, "trials": 5}', "runId: required field is missing"),
]


def _run_doc(change: Callable[[dict[str, Any]], object]) -> str:
    data: dict[str, Any] = json.loads(fixture("single-trial").read_text())
    change(data)
    return json.dumps(data)


def _current_doc(change: Callable[[dict[str, Any]], object]) -> str:
    """The fixture as the current schemaVersion reads it, changed: for what only it has."""
    data: dict[str, Any] = upgrade(json.loads(fixture("single-trial").read_text()))
    change(data)
    return json.dumps(data)


def _trial(**values: Any) -> str:
    return _run_doc(lambda d: d["trials"][0].update(values))


def _extra_trial(**values: Any) -> str:
    return _run_doc(lambda d: d["trials"].append({**d["trials"][0], **values}))


# Results that pass the schema but contradict themselves (issue 37): `compare check` refuses
# them as bad input (exit 2), it never judges them. (id, results.json, fragment)
CONTRADICTING_RESULTS: list[tuple[str, str, str]] = [
    (
        "heal-after-window",
        _trial(timeToHealSeconds=12.5),
        "trials[0].timeToHealSeconds: 12.5 s is after the trial's heal window of 10 s",
    ),
    ("more-trials", _extra_trial(trial=2), "trials[7].trial: trial 2 of pod-delete-one/helm"),
    (
        "approach-not-in-settings",
        _extra_trial(approach="flux"),
        "trials[7].approach: 'flux' is not one of settings.approaches",
    ),
    (
        "approach-not-of-experiment",
        _run_doc(lambda d: d["trials"][0].update(experiment="operator-down-drift")),
        "trials[0].approach: the experiment 'operator-down-drift' does not apply to 'helm'",
    ),
    ("trial-window-longer", _trial(healWindowSeconds=7200), "trials[0].healWindowSeconds: 7200"),
    (
        "skipped-and-run",
        _current_doc(lambda d: d["experiments"][0].update(skippedFor={"helm": "needs a Service"})),
        "experiments[0].skippedFor: 'helm' is one of its approaches too",
    ),
    (
        "settings-window-huge",
        _run_doc(lambda d: d["settings"].update(healWindowSeconds=1.5e308)),
        "settings.healWindowSeconds: 1.5e+308 is more than compare run accepts (3600)",
    ),
    (
        "settings-trials-huge",
        _run_doc(lambda d: d["settings"].update(trials=10**9)),
        "settings.trials: 1e+09 is more than compare run accepts (1000)",
    ),
    (
        "negative-time",
        _trial(timeToHealSeconds=-1),
        "trials[0].timeToHealSeconds: Input should be greater",
    ),
]

# Policies that name no fault in `except` or except every one: bad input (exit 2).
_ALL = {"approach": "helm", "faults": "all", "expect": "heals"}
EXCEPT_POLICIES: list[tuple[str, dict[str, Any], str]] = [
    (
        "except-unknown",
        {**_ALL, "except": ["pod-delete-once"]},
        "expectations[0].except: 'pod-delete-once' is neither a built-in experiment",
    ),
    (
        "except-everything",
        {**_ALL, "except": sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.json"))},
        "expectations[0].except: excepts every fault, so the rule checks nothing",
    ),
]


def _policy_doc(rule_change: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "expectations": [{**_RULE, **rule_change}]}


def _named(file: str, fragment: str) -> str:
    # click refuses a directory for a file option itself: "file '<path>' is a directory".
    return f"{file}' is a directory" if fragment == "DIR" else f"{file}: {fragment}"


def build() -> list[Case]:
    cases: list[Case] = []
    app_arg = ["--app", "{tmp}/app.yaml"]

    def app_file(content: Any) -> dict[str, Any]:
        return {} if content is None else {"app.yaml": content}

    for name, content, fragment in BAD_APPS:
        expected = _named("app.yaml", fragment)
        files = app_file(content)
        cases.append(
            Case(f"webapp/helm/{name}", ["deploy", "helm", *app_arg, *NO_CLUSTER], files, expected)
        )
    # The same files through the other commands that read --app.
    for name, content, fragment in BAD_APPS[::2]:
        expected = _named("app.yaml", fragment)
        files = app_file(content)
        cases.append(
            Case(
                f"webapp/operator/{name}",
                ["deploy", "operator", *app_arg, *NO_CLUSTER],
                files,
                expected,
            )
        )
    for name, content, fragment in BAD_APPS[1::6]:
        expected = _named("app.yaml", fragment)
        files = app_file(content)
        run = ["run", *app_arg, "-e", "pod-delete-one", "--output", "{tmp}/out", *NO_CLUSTER]
        cases.append(Case(f"webapp/run/{name}", run, files, expected))
    for name, content, fragment in BAD_APPS[3::12]:
        expected = _named("app.yaml", fragment)
        files = app_file(content)
        cases.append(
            Case(
                f"webapp/undeploy-helm/{name}",
                ["undeploy", "helm", *app_arg, *NO_CLUSTER],
                files,
                expected,
            )
        )

    valid_app = {"app.yaml": VALID_APP}
    for name, content, fragment in BAD_VALUES:
        files = {**valid_app, **({} if content is None else {"values.yaml": content})}
        args = ["deploy", "helm", *app_arg, "-f", "{tmp}/values.yaml", *NO_CLUSTER]
        cases.append(Case(f"values/{name}", args, files, _named("values.yaml", fragment)))

    for name, content, fragment in BAD_EXPERIMENTS:
        args = ["run", "-e", "{tmp}/mine.json", "--output", "{tmp}/out", *NO_CLUSTER]
        cases.append(
            Case(f"experiment/{name}", args, {"mine.json": content}, f"mine.json: {fragment}")
        )
    run = ["run", "--output", "{tmp}/out"]
    cases += [
        Case(
            "experiment/unknown-name",
            [*run, "-e", "no-such-fault", *NO_CLUSTER],
            {},
            "'no-such-fault': not a built-in",
        ),
        Case(
            "experiment/missing-file",
            [*run, "-e", "{tmp}/none.json", *NO_CLUSTER],
            {},
            "none.json: no such file",
        ),
        # YAML reads `.inf` as a number JSON cannot carry: an infinite pause is refused too.
        Case(
            "experiment/yaml-pause-infinite",
            [*run, "-e", "{tmp}/mine.yaml", *NO_CLUSTER],
            {"mine.yaml": _yaml_with_infinite_pause()},
            "mine.yaml: method[0].pauses.after: inf is not a finite number of seconds",
        ),
        Case(
            "experiment/twice",
            [*run, "-e", "env-add", "-e", "env-add", *NO_CLUSTER],
            {},
            "'env-add' is given twice",
        ),
    ]

    results = str(fixture("single-trial"))
    for name, rule_change, fragment in BAD_POLICIES:
        files = {"policy.yaml": _policy_doc(rule_change)}
        cases.append(
            Case(
                f"policy/{name}",
                ["check", results, "--policy", "{tmp}/policy.yaml"],
                files,
                f"policy.yaml: {fragment}",
            )
        )
    for name, content, fragment in BAD_POLICY_FILES:
        files = {} if content is None else {"policy.yaml": content}
        cases.append(
            Case(
                f"policy/file-{name}",
                ["check", results, "--policy", "{tmp}/policy.yaml"],
                files,
                f"policy.yaml: {fragment}",
            )
        )
        if name in ("version-2", "not-utf8", "dev-zero", "multi-document"):
            args = ["report", results, "--policy", "{tmp}/policy.yaml", "-f", "junit"]
            cases.append(Case(f"policy/report-{name}", args, files, f"policy.yaml: {fragment}"))
    for name, content, fragment in BAD_RESULTS:
        files = {"run/results.json": content}
        cases.append(
            Case(
                f"results/check-{name}", ["check", "{tmp}/run"], files, f"results.json: {fragment}"
            )
        )
        cases.append(
            Case(
                f"results/report-{name}",
                ["report", "{tmp}/run/results.json"],
                files,
                f"results.json: {fragment}",
            )
        )
    for name, content, fragment in CONTRADICTING_RESULTS:
        cases.append(
            Case(
                f"results/contradiction-{name}",
                ["check", "{tmp}/run"],
                {"run/results.json": content},
                f"results.json: {fragment}",
            )
        )
    for name, rule, fragment in EXCEPT_POLICIES:
        cases.append(
            Case(
                f"policy/{name}",
                ["check", results, "--policy", "{tmp}/policy.yaml"],
                {"policy.yaml": {"version": 1, "expectations": [rule]}},
                f"policy.yaml: {fragment}",
            )
        )
    cases += [
        Case(
            "results/no-results-in-dir",
            ["report", "{tmp}/run"],
            {"run/other.txt": "x"},
            "no results.json in",
        ),
        Case("results/missing-file", ["check", "{tmp}/none.json"], {}, "none.json: no such run"),
        Case(
            "results/report-output-uncreatable",
            ["report", results, "-f", "md", "-o", "{tmp}/afile/sub/report.md"],
            {"afile": "a file, not a directory"},
            "--output",
        ),
        Case("results/report-format", ["report", results, "-f", "pdf"], {}, "'pdf' is not one of"),
    ]

    # `dropUnservedWebhooks` and `dropUnservedAPIServices` need a post-render step (helm's,
    # helm-controller's): the argocd arm, whose repo-server has none, refuses each, naming the
    # field, before the cluster; either is a boolean (never coerced).
    chart = {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n"}
    refused = "not possible with the argocd arm"
    for name, key, arm, value, fragment in (
        ("drop-webhooks", "dropUnservedWebhooks", "argocd", True, refused),
        ("drop-apiservices", "dropUnservedAPIServices", "argocd", True, refused),
        (
            "drop-apiservices",
            "dropUnservedAPIServices",
            "flux",
            "yes",
            "Input should be a valid boolean",
        ),
    ):
        target = {
            "apiVersion": "compare.example.com/v1alpha1",
            "kind": "Target",
            "name": "shop",
            arm: {"chart": {"path": "chart"}, key: value},
        }
        cases.append(
            Case(
                f"target/{name}-{arm}",
                ["deploy", arm, "--target", "{tmp}/t.yaml", *NO_CLUSTER],
                {"t.yaml": target, **chart},
                f"t.yaml: {arm}.{key}: {fragment}",
            )
        )
    # `disableHooks`: a boolean (never coerced); the argocd arm, whose automated sync runs
    # every hook, refuses it, naming the field, before the cluster.
    for arm, value, fragment in (
        ("helm", "yes", "helm.disableHooks: Input should be a valid boolean"),
        ("argocd", True, "argocd.disableHooks: not possible with the argocd arm"),
    ):
        target = {
            "apiVersion": "compare.example.com/v1alpha1",
            "kind": "Target",
            "name": "shop",
            arm: {"chart": {"path": "chart"}, "disableHooks": value},
        }
        cases.append(
            Case(
                f"target/disable-hooks-{arm}",
                ["deploy", arm, "--target", "{tmp}/t.yaml", *NO_CLUSTER],
                {"t.yaml": target, **chart},
                f"t.yaml: {fragment}",
            )
        )
    cases += _flag_cases(valid_app)
    cases += _escape_cases(results)
    cases += sweep_cases()
    cases += third_sweep_cases()
    return cases


# A name that would act on a terminal or a CI log, or be eaten as rich markup: the one error
# line shows it escaped (`compare.inert`), whole, and it is still one line.
_HOSTILE = "x\x1b[2J[bold][/]\u202e\r\n::error::forged"
_HOSTILE_SHOWN = "x\\x1b[2J[bold][/]\\u202e\\r\\n::error::forged"


def _escape_cases(results: str) -> list[Case]:
    kubeconfig = {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "c"}}],
    }
    return [
        Case(
            "escape/check-run-path",
            ["check", f"{{tmp}}/{_HOSTILE}/results.json"],
            {},
            f"{_HOSTILE_SHOWN}/results.json: no such run",
        ),
        Case(
            "escape/report-run-path",
            ["report", f"{{tmp}}/{_HOSTILE}.json", "-f", "md"],
            {},
            f"{_HOSTILE_SHOWN}.json: no such run",
        ),
        Case(
            "escape/report-policy-path",
            ["report", results, "-f", "junit", "--policy", f"{{tmp}}/{_HOSTILE}.yaml"],
            {},
            f"{_HOSTILE_SHOWN}.yaml",
        ),
        Case(
            "escape/status-context",
            ["status", "--kubeconfig", "{tmp}/kc", "--context", f"prod{_HOSTILE}"],
            {"kc": kubeconfig},
            f"no context 'prod{_HOSTILE_SHOWN}' (known: dev)",
        ),
    ]


def _flag_cases(valid_app: dict[str, Any]) -> list[Case]:
    app_arg = ["--app", "{tmp}/app.yaml"]
    run = ["run", *app_arg, "-e", "pod-delete-one", "--output", "{tmp}/out"]
    helm = ["deploy", "helm", *app_arg]
    operator = ["deploy", "operator", *app_arg]
    cases: list[Case] = []
    run_flags = [
        (
            "heal-window-inf",
            ["--heal-window", "inf"],
            "--heal-window: inf is not in the range 0.1 to 3600",
        ),
        ("heal-window-nan", ["--heal-window", "nan"], "--heal-window: nan is not in the range"),
        ("heal-window-1e9", ["--heal-window", "1e9"], "--heal-window: 1e+09 is not in the range"),
        ("heal-window-negative", ["--heal-window", "-1"], "--heal-window: -1 is not in the range"),
        (
            "heal-window-word",
            ["--heal-window", "ten"],
            "Invalid value for '--heal-window'",
        ),
        ("settle-negative", ["--settle", "-1"], "--settle: -1 is not in the range 0 to 60"),
        ("settle-high", ["--settle", "61"], "--settle: 61 is not in the range"),
        ("settle-nan", ["--settle", "nan"], "--settle: nan is not in the range"),
        ("recheck-zero", ["--recheck", "0"], "--recheck: 0 is not in the range"),
        ("recheck-inf", ["--recheck", "inf"], "--recheck: inf is not in the range"),
        ("trials-zero", ["--trials", "0"], "--trials"),
        ("parallel-zero", ["--parallel", "0"], "--parallel"),
        ("parallel-high", ["--parallel", "33"], "--parallel"),
        ("clusters-zero", ["--clusters", "0"], "--clusters"),
        ("clusters-high", ["--clusters", "17"], "--clusters"),
        ("clusters-word", ["--clusters", "two"], "--clusters"),
        ("approach-unknown", ["--approach", "kustomize"], "'kustomize' is not one of"),
        (
            "deploy-timeout-zero",
            ["--deploy-timeout", "0"],
            "--deploy-timeout: 0 is not in the range",
        ),
        ("deploy-timeout-nan", ["--deploy-timeout", "nan"], "--deploy-timeout: nan is not in the"),
    ]
    for name, flags, fragment in run_flags:
        cases.append(Case(f"flags/run-{name}", [*run, *flags, *NO_CLUSTER], valid_app, fragment))
    cases.append(
        Case(
            "flags/run-output-uncreatable",
            ["run", *app_arg, "-e", "pod-delete-one", "--output", "{tmp}/afile/out", *NO_CLUSTER],
            {**valid_app, "afile": "x"},
            "--output",
        )
    )
    conflict = {"app.yaml": _meta(namespace="shop")}
    deploy_flags = [
        (
            "timeout-zero",
            ["--timeout", "0"],
            valid_app,
            "--timeout: 0 is not in the range 1 to 3600",
        ),
        ("timeout-inf", ["--timeout", "inf"], valid_app, "--timeout: inf is not in the range"),
        ("timeout-nan", ["--timeout", "nan"], valid_app, "--timeout: nan is not in the range"),
        ("namespace-upper", ["-n", "Bad_NS"], valid_app, "namespace 'Bad_NS'"),
        ("namespace-long", ["-n", "n" * 64], valid_app, "namespace 'nnnn"),
        (
            "namespace-conflict",
            ["-n", "other"],
            conflict,
            "metadata.namespace 'shop' conflicts with -n 'other'",
        ),
    ]
    for name, flags, files, fragment in deploy_flags:
        cases.append(Case(f"flags/helm-{name}", [*helm, *flags, *NO_CLUSTER], files, fragment))
        cases.append(
            Case(f"flags/operator-{name}", [*operator, *flags, *NO_CLUSTER], files, fragment)
        )
    cases += [
        Case(
            "flags/helm-release-bad",
            [*helm, "--release", "Bad_Release", *NO_CLUSTER],
            valid_app,
            "release 'Bad_Release'",
        ),
        # Flux's command takes the chart options as Helm's does, and its own interval.
        Case(
            "flags/flux-release-bad",
            ["deploy", "flux", *app_arg, "--release", "Bad_Release", *NO_CLUSTER],
            valid_app,
            "release 'Bad_Release'",
        ),
        Case(
            "flags/flux-interval-zero",
            ["deploy", "flux", *app_arg, "--flux-interval", "0", *NO_CLUSTER],
            valid_app,
            "--flux-interval: 0 is not in the range 0.5 to 3600",
        ),
        Case(
            "flags/undeploy-flux-namespace",
            ["undeploy", "flux", "--release", "shop", "-n", "Bad_NS", *NO_CLUSTER],
            {},
            "namespace 'Bad_NS'",
        ),
        Case(
            "flags/operator-webhook-host-space",
            [*operator, "--webhook-host", "bad host!", *NO_CLUSTER],
            valid_app,
            "--webhook-host 'bad host!': not a host name",
        ),
        Case(
            "flags/operator-webhook-host-dots",
            [*operator, "--webhook-host", "a..b", *NO_CLUSTER],
            valid_app,
            "--webhook-host 'a..b'",
        ),
        Case(
            "flags/operator-webhook-host-url",
            [*operator, "--webhook-host", "https://x", *NO_CLUSTER],
            valid_app,
            "--webhook-host 'https://x'",
        ),
        Case(
            "flags/undeploy-operator-stop-and-keep",
            ["undeploy", "operator", "--stop-operator", "--keep-operator", *NO_CLUSTER],
            {},
            "--stop-operator and --keep-operator contradict",
        ),
        Case(
            "flags/undeploy-operator-namespace",
            ["undeploy", "operator", "--name", "shop", "-n", "Bad_NS", *NO_CLUSTER],
            {},
            "namespace 'Bad_NS'",
        ),
        Case(
            "flags/undeploy-helm-namespace",
            ["undeploy", "helm", "--release", "shop", "-n", "Bad_NS", *NO_CLUSTER],
            {},
            "namespace 'Bad_NS'",
        ),
        Case(
            "flags/undeploy-helm-conflict",
            ["undeploy", "helm", *app_arg, "-n", "other", *NO_CLUSTER],
            conflict,
            "conflicts with -n 'other'",
        ),
        Case(
            "flags/status-namespace",
            ["status", "-n", "Bad_NS", *NO_CLUSTER],
            {},
            "namespace 'Bad_NS'",
        ),
        Case("flags/cleanup-empty-run", ["cleanup", "--run", "", *NO_CLUSTER], {}, "--run"),
        Case(
            "flags/cleanup-run-id",
            ["cleanup", "--run", "cmp-helm-x", *NO_CLUSTER],
            {},
            "--run 'cmp-helm-x': not a run id",
        ),
        Case("flags/cluster-up-nodes", ["cluster", "up", "--nodes", "0"], {}, "--nodes"),
        Case("flags/cluster-up-port", ["cluster", "up", "--port", "70000"], {}, "--port"),
        Case("flags/unknown-command", ["deploy", "kustomize"], {}, "No such command 'kustomize'"),
        Case("flags/unknown-option", ["status", "--colour"], {}, "No such option: --colour"),
        # --context without --kubeconfig: the message names the context, not ~/.kube/config.
        Case(
            "flags/context-without-kubeconfig",
            ["--context", "prod", "status"],
            {},
            "--context 'prod': no kubeconfig holds it",
            env={"KUBECONFIG": None, "HOME": "{tmp}"},
        ),
        Case(
            "flags/kubeconfig-missing",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {},
            "kubeconfig {tmp}/kc: no such file",
        ),
        Case(
            "flags/kubeconfig-not-yaml",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": ": : ["},
            "kc: not valid YAML",
        ),
        Case(
            "flags/kubeconfig-not-utf8",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": b"\xff"},
            "kc: not UTF-8 text",
        ),
        Case(
            "flags/kubeconfig-fifo",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": FIFO},
            "kc: not a regular file",
        ),
        Case(
            "flags/kubeconfig-no-clusters",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": {"kind": "Config"}},
            "no clusters defined",
        ),
        Case(
            "flags/kubeconfig-unknown-context",
            ["status", "--kubeconfig", "{tmp}/kc", "--context", "prod"],
            {
                "kc": {
                    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                    "contexts": [{"name": "dev", "context": {"cluster": "c"}}],
                }
            },
            "no context 'prod' (known: dev)",
        ),
        # Credential files the client would read whole, without a limit: a token file that
        # is a FIFO hung every command, one that is /dev/zero grew the process by gigabytes.
        *(
            Case(
                f"flags/kubeconfig-{key.lower()}-{kind}",
                ["status", "--kubeconfig", "{tmp}/kc"],
                {"kc": _kubeconfig_with(where, key, "cred"), "cred": content},
                f"{named}.{key}: {{tmp}}/cred: {said}",
            )
            for where, named, key in (
                ("users[].user", "users[u].user", "tokenFile"),
                ("users[].user", "users[u].user", "client-key"),
                ("clusters[].cluster", "clusters[c].cluster", "certificate-authority"),
            )
            for kind, content, said in (
                ("fifo", FIFO, "not a regular file"),
                ("dev-zero", DEV_ZERO, "not a regular file"),
                ("directory", DIRECTORY, "is a directory, not a file"),
            )
        ),
        Case(
            "flags/kubeconfig-huge-token-file",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": _kubeconfig_with("users[].user", "tokenFile", "cred"), "cred": "x" * (2 << 20)},
            "users[u].user.tokenFile: {tmp}/cred: larger than 1 MiB",
        ),
    ]
    return cases


def _kubeconfig_with(where: str, key: str, value: str) -> dict[str, Any]:
    """A kubeconfig whose context's cluster or user names `value` for `key`."""
    cluster: dict[str, Any] = {"server": "https://127.0.0.1:1"}
    user: dict[str, Any] = {}
    (cluster if where.startswith("clusters") else user)[key] = value
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user}],
    }


CASES = build()
