"""The second sweep's classes (issue 24), as table cases: every input file type with an alias
bomb, a duplicate key, runaway nesting and a huge number; outputs that must never be written
over (a FIFO, a symlink to a device, the run's own results.json, a dangling symlink, a symlink
loop); empty and degenerate names; system namespaces; cluster names that would escape the
cache; kubeconfig exec plugins that are missing or fail; results files that would pass a check
vacuously. `CLASSES` maps each class to its case ids (the closing note's counts)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from compare.paths import EXPERIMENTS_DIR
from tests.cli.badinput.common import (
    DEV_ZERO,
    DIRECTORY,
    FIFO,
    NO_CLUSTER,
    SYMLINK,
    VALID_APP,
    Case,
)
from tests.results.helpers import fixture

# A "billion laughs": nine levels of nine aliases (9^9 nodes once expanded), under `key`.
_LEVELS = "abcdefghi"


def bomb(key: str = "lol", indent: str = "") -> str:
    lines = [f"{indent}{key}:", f"{indent}  a: &a [l, l, l, l, l, l, l, l, l]"]
    for previous, name in itertools.pairwise(_LEVELS):
        refs = ", ".join([f"*{previous}"] * 9)
        lines.append(f"{indent}  {name}: &{name} [{refs}]")
    return "\n".join(lines) + "\n"


def _yaml(doc: dict[str, Any]) -> str:
    return json.dumps(doc)  # JSON is YAML: the file's keys stay in order, easy to append to


APP_TEXT = _yaml(VALID_APP) + "\n"
DEEP = "[" * 150 + "]" * 150
HUGE = "9" * 40

BOMB_MSG = "aliases expand to more than 100000 nodes"
DUP_MSG = "duplicate key"
DEEP_MSG = "nested deeper than 100 levels"
HUGE_MSG = "number with 40 digits is too large"

_POLICY = (
    "version: 1\nexpectations:\n  - {approach: helm, faults: [pod-delete-one], expect: heals}\n"
)
_TARGET = (
    "apiVersion: compare.example.com/v1alpha1\nkind: Target\nname: shop\n"
    "helm:\n  chart: {path: chart}\n  release: shop\n"
)
# An operator the toolkit would run (`install.process`), its program and CRD file to check.
_PROCESS_TARGET = (
    "apiVersion: compare.example.com/v1alpha1\nkind: Target\nname: shop\n"
    "operator:\n  install:\n    process: {command: [no-such-operator, run], crds: [crd.yaml]}\n"
    "  resources: [{apiVersion: x.example.com/v1, kind: Shop, metadata: {name: shop}}]\n"
    "  ready: {condition: Ready}\n"
)
_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
)
_EXPERIMENT_YAML = "title: t\ndescription: d\nmethod: []\n"


def _webapp_variants() -> dict[str, str]:
    return {
        "bomb": "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: shop}\n"
        "spec: {image: 'shop:v1'}\n" + bomb(),
        "recursive": "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: shop}\n"
        "spec: {image: 'shop:v1'}\nlol: &r [1, *r]\n",
        "duplicate-key": "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: shop}\n"
        "spec:\n  image: 'shop:v1'\n  replicas: 2\n  replicas: 50\n",
        "deep": "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: shop}\n"
        f"spec: {{image: 'shop:v1'}}\nlol: {DEEP}\n",
        "huge-number": "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: shop}\n"
        f"spec: {{image: 'shop:v1', replicas: {HUGE}}}\n",
    }


_EXPECTED = {
    "recursive": "is inside its own anchor (a recursive structure)",
    "bomb": BOMB_MSG,
    "duplicate-key": DUP_MSG,
    "deep": DEEP_MSG,
    "huge-number": HUGE_MSG,
}


def _bounded_inputs() -> list[Case]:
    cases: list[Case] = []
    results = str(fixture("single-trial"))
    valid_app = {"app.yaml": APP_TEXT}
    files: dict[str, tuple[str, list[str], dict[str, str], dict[str, str]]] = {
        # kind: (file, command, other files, {variant: content})
        "webapp": (
            "app.yaml",
            ["deploy", "helm", "--app", "{tmp}/app.yaml", *NO_CLUSTER],
            {},
            _webapp_variants(),
        ),
        "webapp-operator": (
            "app.yaml",
            ["deploy", "operator", "--app", "{tmp}/app.yaml", *NO_CLUSTER],
            {},
            _webapp_variants(),
        ),
        "values": (
            "values.yaml",
            ["deploy", "helm", "--app", "{tmp}/app.yaml", "-f", "{tmp}/values.yaml", *NO_CLUSTER],
            valid_app,
            {
                "bomb": bomb("podLabels"),
                "recursive": "tolerations: &r [*r]\n",
                "duplicate-key": "podLabels: {a: x}\npodLabels: {b: y}\n",
                "deep": f"tolerations: {DEEP}\n",
                "huge-number": f"securityContext: {{runAsUser: {HUGE}}}\n",
            },
        ),
        "experiment-yaml": (
            "mine.yaml",
            ["run", "-e", "{tmp}/mine.yaml", "--output", "{tmp}/out", *NO_CLUSTER],
            {},
            {
                "bomb": _EXPERIMENT_YAML + bomb(),
                "recursive": _EXPERIMENT_YAML + "lol: &r {a: *r}\n",
                "duplicate-key": _EXPERIMENT_YAML + "title: again\n",
                "deep": _EXPERIMENT_YAML + f"lol: {DEEP}\n",
                "huge-number": _EXPERIMENT_YAML + f"lol: {HUGE}\n",
            },
        ),
        "experiment-json": (
            "mine.json",
            ["run", "-e", "{tmp}/mine.json", "--output", "{tmp}/out", *NO_CLUSTER],
            {},
            {
                "duplicate-key": '{"title": "t", "title": "u", "method": []}',
                "deep": '{"title": "t", "lol": ' + "[" * 5000 + "]" * 5000 + "}",
                "huge-number": '{"title": "t", "lol": ' + HUGE + "}",
            },
        ),
        "policy": (
            "policy.yaml",
            ["check", results, "--policy", "{tmp}/policy.yaml"],
            {},
            {
                "bomb": _POLICY + bomb(),
                "recursive": _POLICY + "lol: &r [*r]\n",
                "duplicate-key": _POLICY + "version: 1\n",
                "deep": _POLICY + f"lol: {DEEP}\n",
                "huge-number": _POLICY.replace("heals}", f"heals, within: {HUGE}}}"),
            },
        ),
        "target": (
            "t.yaml",
            ["deploy", "helm", "--target", "{tmp}/t.yaml", *NO_CLUSTER],
            {},
            {
                "bomb": _TARGET + "  values:\n" + bomb("podLabels", "    "),
                "duplicate-key": _TARGET + "name: other\n",
                "deep": _TARGET + f"  values: {{tolerations: {DEEP}}}\n",
                "huge-number": _TARGET + f"  values: {{replicaCount: {HUGE}}}\n",
            },
        ),
        "kubeconfig": (
            "kc",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {},
            {
                "bomb": _KUBECONFIG + bomb("preferences"),
                "recursive": _KUBECONFIG + "preferences: &r {a: *r}\n",
                "duplicate-key": _KUBECONFIG + "current-context: d\n",
                "deep": _KUBECONFIG + f"extensions: {DEEP}\n",
                "huge-number": _KUBECONFIG + f"preferences: {{n: {HUGE}}}\n",
            },
        ),
        "results": (
            "run/results.json",
            ["check", "{tmp}/run"],
            {},
            {
                "duplicate-key": '{"schemaVersion": 2, "schemaVersion": 1}',
                "deep": '{"schemaVersion": 2, "lol": ' + "[" * 5000 + "]" * 5000 + "}",
                "huge-number": '{"schemaVersion": ' + HUGE + "}",
            },
        ),
    }
    for kind, (name, args, others, variants) in files.items():
        short = name.rsplit("/", 1)[-1]
        for variant, content in variants.items():
            expected = _EXPECTED[variant]
            if kind in ("experiment-json", "results") and variant == "deep":
                expected = "nested too deeply"
            cases.append(
                Case(
                    f"bounded/{kind}-{variant}",
                    args,
                    {**others, name: content},
                    expected,
                    also=(f"{short}: ",),
                )
            )
    return cases


def _results_doc(change: dict[str, Any]) -> str:
    data = json.loads(fixture("single-trial").read_text())
    data.update(change)
    return json.dumps(data)


def _degenerate() -> list[Case]:
    app = ["--app", "{tmp}/app.yaml"]
    valid_app = {"app.yaml": APP_TEXT}
    empty = [
        (
            "undeploy-operator-name",
            ["undeploy", "operator", "--name", "", "--keep-operator"],
            "--name",
        ),
        (
            "undeploy-operator-namespace",
            ["undeploy", "operator", "--name", "shop", "-n", ""],
            "--namespace",
        ),
        ("undeploy-helm-release", ["undeploy", "helm", "--release", ""], "--release"),
        (
            "undeploy-helm-namespace",
            ["undeploy", "helm", "--release", "shop", "-n", ""],
            "--namespace",
        ),
        ("undeploy-flux-release", ["undeploy", "flux", "--release", "  "], "--release"),
        ("deploy-helm-namespace", ["deploy", "helm", *app, "-n", ""], "--namespace"),
        ("deploy-helm-release", ["deploy", "helm", *app, "--release", ""], "--release"),
        ("deploy-operator-namespace", ["deploy", "operator", *app, "-n", ""], "--namespace"),
        ("deploy-flux-namespace", ["deploy", "flux", *app, "-n", ""], "--namespace"),
        ("status-namespace", ["status", "-n", ""], "--namespace"),
    ]
    cases = [
        Case(
            f"empty/{name}",
            [*args, *NO_CLUSTER],
            valid_app,
            f"Invalid value for {flag}: must not be empty",
        )
        for name, args, flag in empty
    ]
    cases.append(
        Case(
            "empty/cluster-name",
            ["cluster", "status", "--name", ""],
            {},
            "Invalid value for --name: must not be empty",
        )
    )
    for ns in ("kube-system", "kube-public", "kube-node-lease"):
        for cmd in (
            ["deploy", "helm", *app],
            ["deploy", "operator", *app],
            ["undeploy", "helm", "--release", "shop"],
            ["undeploy", "operator", "--name", "shop"],
        ):
            cases.append(
                Case(
                    f"system-namespace/{cmd[0]}-{cmd[1]}-{ns}",
                    [*cmd, "-n", ns, *NO_CLUSTER],
                    valid_app,
                    f"namespace {ns!r}: a system namespace of the cluster",
                )
            )
    for i, bad in enumerate(["../escape", "a/b", "..", "UPPER", "x" * 41, "-lead"]):
        for sub in ("status", "down", "kubeconfig"):
            cases.append(
                Case(
                    f"cluster-name/{sub}-{i}",
                    ["cluster", sub, "--name", bad],
                    {},
                    f"cluster name {bad!r}: must be lower-case letters",
                )
            )
    cases.append(
        Case(
            "cluster-name/env",
            ["cluster", "status"],
            {},
            "cluster name '../../etc': must be",
            env={"COMPARE_CLUSTER_NAME": "../../etc"},
        )
    )
    cases.append(
        Case(
            "cache-dir/is-a-file",
            ["cluster", "status", "--name", "x"],
            {"cachefile": "x"},
            "cache directory {tmp}/cachefile: {tmp}/cachefile is not a directory",
            env={"COMPARE_CACHE_DIR": "{tmp}/cachefile"},
        )
    )
    for name, args in (("status", ["status"]), ("run", ["run", "--output", "{tmp}/o"])):
        cases.append(
            Case(
                f"cache-dir/{name}-under-a-file",
                args,
                {"cachefile": "x"},
                "cache directory {tmp}/cachefile/sub: {tmp}/cachefile is not a directory",
                env={"COMPARE_CACHE_DIR": "{tmp}/cachefile/sub", "KUBECONFIG": None},
            )
        )
    cases += [
        Case(
            "results/check-complete-no-trials",
            ["check", "{tmp}/run"],
            {"run/results.json": _results_doc({"trials": [], "complete": True})},
            "complete is true but it holds no trials",
            also=("results.json: ",),
        ),
        Case(
            "results/check-infinite-window",
            ["check", "{tmp}/run"],
            {
                "run/results.json": _results_doc({}).replace(
                    '"healWindowSeconds": 10.0', '"healWindowSeconds": Infinity'
                )
            },
            "Infinity is not a JSON number",
            also=("results.json: ",),
        ),
        Case(
            "results/check-overflow-window",
            ["check", "{tmp}/run"],
            {
                "run/results.json": _results_doc({}).replace(
                    '"healWindowSeconds": 10.0', '"healWindowSeconds": 1e999'
                )
            },
            "1e999 is not a finite number",
            also=("results.json: ",),
        ),
        Case(
            "results/report-infinite-window",
            ["report", "{tmp}/run", "-f", "md"],
            {
                "run/results.json": _results_doc({}).replace(
                    '"healWindowSeconds": 10.0', '"healWindowSeconds": -Infinity'
                )
            },
            "-Infinity is not a JSON number",
        ),
        Case(
            "empty/target-chart-renders-nothing",
            ["deploy", "helm", "--target", "{tmp}/t.yaml", "-n", "shop", *NO_CLUSTER],
            {
                "t.yaml": _TARGET,
                "chart/Chart.yaml": "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
                "chart/templates/NOTES.txt": "nothing here\n",
            },
            "helm: the chart renders no objects",
            also=("t.yaml: ",),
        ),
        Case(
            "empty/target-flux-chart-renders-nothing",
            ["deploy", "flux", "--target", "{tmp}/t.yaml", "-n", "shop", *NO_CLUSTER],
            {
                "t.yaml": _TARGET.replace("helm:", "flux:"),
                "chart/Chart.yaml": "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
                "chart/templates/NOTES.txt": "nothing here\n",
            },
            "the chart renders no objects",
        ),
        Case(
            "target/operator-process-not-on-path",
            ["deploy", "operator", "--target", "{tmp}/t.yaml", "-n", "shop", *NO_CLUSTER],
            {"t.yaml": _PROCESS_TARGET},
            "operator.install.process.command[0]: no-such-operator: not found on PATH",
            also=("t.yaml: ",),
        ),
        Case(
            "target/operator-process-crds-missing",
            ["deploy", "operator", "--target", "{tmp}/t.yaml", "-n", "shop", *NO_CLUSTER],
            {"t.yaml": _PROCESS_TARGET.replace("no-such-operator", "python")},
            "operator.install.process.crds[0]: crd.yaml: no such file or directory",
            also=("t.yaml: ",),
        ),
        Case(
            "webapp/replicas-sexagesimal",
            ["deploy", "helm", *app, *NO_CLUSTER],
            {"app.yaml": APP_TEXT.replace('"replicas": 2', '"replicas": 1:30')},
            "spec.replicas: Input should be a valid integer",
        ),
        Case(
            "flags/run-trials-huge",
            [
                "run",
                *app,
                "-e",
                "pod-delete-one",
                "--trials",
                "1000000000",
                "--output",
                "{tmp}/o",
                *NO_CLUSTER,
            ],
            valid_app,
            # Click words the range differently from version to version (the floors' says
            # "is not in the range 1<=x<=1000"): the flag and the bound are what must be there.
            "'--trials' / '-n'",
            also=("1000",),
        ),
    ]
    return cases


def _outputs() -> list[Case]:
    results = str(fixture("single-trial"))
    specials = {
        "fifo": (FIFO, "is a FIFO"),
        "symlink-dev-null": (
            SYMLINK + "/dev/null",
            "is a character device (a symlink to /dev/null)",
        ),
        "symlink-dev-full": (SYMLINK + "/dev/full", "is a character device"),
        "symlink-fifo": (SYMLINK + "fifo", "is a FIFO (a symlink to"),
        "dangling-symlink": (SYMLINK + "nowhere", "a symlink to nothing"),
        "symlink-loop": (SYMLINK + "out.md", "a symlink loop"),
    }
    cases: list[Case] = []
    for name, (content, said) in specials.items():
        files: dict[str, Any] = {"out.md": content}
        if name == "symlink-fifo":
            files["fifo"] = FIFO
        for fmt in ("md", "json", "junit", "html"):
            cases.append(
                Case(
                    f"outputs/report-{fmt}-{name}",
                    ["report", results, "-f", fmt, "-o", "{tmp}/out.md"],
                    files,
                    f"--output {{tmp}}/out.md: {said}",
                )
            )
    own = json.loads(fixture("single-trial").read_text())
    for fmt in ("md", "json", "html"):
        cases.append(
            Case(
                f"outputs/report-{fmt}-over-own-results",
                ["report", "{tmp}/run", "-f", fmt, "-o", "{tmp}/run/results.json"],
                {"run/results.json": json.dumps(own)},
                "is this command's own input",
            )
        )
    return cases


def _exec_plugins() -> list[Case]:
    def kubeconfig(command: str, args: list[str]) -> str:
        user = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": command,
                "args": args,
            }
        }
        return _KUBECONFIG.replace(
            "contexts:", "users: [{name: u, user: " + json.dumps(user) + "}]\ncontexts:"
        )

    return [
        Case(
            "exec-plugin/missing",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": kubeconfig("no-such-credential-plugin", [])},
            "exec credential plugin 'no-such-credential-plugin' not found",
            also=("kc: ",),
        ),
        Case(
            "exec-plugin/fails",
            ["status", "--kubeconfig", "{tmp}/kc"],
            {"kc": kubeconfig("sh", ["-c", "echo token expired >&2; exit 3"])},
            "exec credential plugin 'sh' exited with status 3: token expired",
        ),
    ]


def _experiment_shapes() -> list[Case]:
    """Shapes chaoslib's validation assumed (each was exit 3 "unexpected", no file named)."""
    base = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())

    def doc(change: dict[str, Any], where: str = "") -> str:
        data = json.loads(json.dumps(base))
        (data[where] if where else data).update(change)
        return json.dumps(data)

    shapes = [
        ("method-object", doc({"method": {"a": 1}}), "method: must be a list of activities"),
        ("method-string", doc({"method": "x"}), "method: must be a list of activities"),
        ("method-number-item", doc({"method": [1]}), "method[0]: must be an activity"),
        ("hypothesis-list", doc({"steady-state-hypothesis": [1]}), "steady-state-hypothesis:"),
        (
            "probes-object",
            doc({"probes": {"a": 1}}, "steady-state-hypothesis"),
            "steady-state-hypothesis.probes: must be a list of activities",
        ),
        ("rollbacks-object", doc({"rollbacks": {"a": 1}}), "rollbacks: must be a list"),
        ("configuration-list", doc({"configuration": [1]}), "configuration: must be an object"),
        ("title-number", doc({"title": 5}), "title: must be a string"),
        ("tags-object", doc({"tags": {"a": 1}}), "tags: must be a list of strings"),
        ("extension-name-number", doc({"extensions": [{"name": 5}]}), "extensions[0].name:"),
    ]
    data = json.loads(json.dumps(base))
    data["method"][0]["provider"] = "x"
    shapes.append(("provider-string", json.dumps(data), "method[0].provider: must be an object"))
    return [
        Case(
            f"experiment-shape/{name}",
            ["run", "-e", "{tmp}/mine.json", "--output", "{tmp}/out", *NO_CLUSTER],
            {"mine.json": content},
            f"mine.json: {fragment}",
        )
        for name, content, fragment in shapes
    ]


def _input_kinds() -> list[Case]:
    """What is at an input path is named: a directory, a FIFO, a device, a symlink loop or
    a symlink to nothing (all were "no such file" for some commands)."""
    kinds = {
        "directory": (DIRECTORY, "is a directory, not a file"),
        "fifo": (FIFO, "not a regular file"),
        "dev-zero": (DEV_ZERO, "not a regular file"),
        "symlink-loop": (SYMLINK + "in.json", "a symlink loop, not a file"),
        "dangling-symlink": (SYMLINK + "nowhere", "a symlink to nothing"),
    }
    cases: list[Case] = []
    for name, (content, said) in kinds.items():
        files = {"in.json": content}
        cases.append(
            Case(
                f"input-kind/experiment-{name}",
                ["run", "-e", "{tmp}/in.json", "--output", "{tmp}/out", *NO_CLUSTER],
                files,
                f"in.json: {said}",
            )
        )
        if name in ("symlink-loop", "dangling-symlink"):
            cases.append(
                Case(f"input-kind/report-{name}", ["report", "{tmp}/in.json"], files, said)
            )
            cases.append(
                Case(
                    f"input-kind/kubeconfig-{name}",
                    ["status", "--kubeconfig", "{tmp}/in.json"],
                    files,
                    f"kubeconfig {{tmp}}/in.json: {said}",
                )
            )
    return cases


def sweep_cases() -> list[Case]:
    return [
        *_bounded_inputs(),
        *_degenerate(),
        *_outputs(),
        *_exec_plugins(),
        *_experiment_shapes(),
        *_input_kinds(),
    ]


def classes(cases: list[Case]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.cls] = counts.get(case.cls, 0) + 1
    return counts
