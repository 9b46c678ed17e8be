"""The third sweep's clear refusals (issue 37, items 3 and 8), as table cases: binary input
(NUL bytes, as /proc/self/environ), NUL and lone surrogates in titles and results, target
values that are YAML `!!binary` or a timestamp, kubeconfig credential files that are no
regular file and auth providers the clients lack, and output paths that name a directory
(a trailing slash) or are too long. Cases that need a process of their own (a closed stdout,
a shared directory, a full disk, no home, LANG=C) are in test_shared_outputs.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compare.paths import EXPERIMENTS_DIR
from tests.cli.badinput.common import DEV_ZERO, FIFO, NO_CLUSTER, VALID_APP, Case
from tests.results.helpers import fixture

BINARY = b"HOME=/root\x00PATH=/usr/bin\x00LANG=C\x00"  # what /proc/self/environ holds
NOT_YAML = "not YAML text (character U+0000 at offset 10"
NUL = "holds a NUL character (U+0000"
SURROGATE = "holds a lone surrogate (U+D800"

_TARGET = (
    "apiVersion: compare.example.com/v1alpha1\nkind: Target\nname: shop\n"
    "helm:\n  chart: {path: chart}\n  release: shop\n"
)
_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'CA}}]\n"
    "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    "users: [{name: u, user: USER}]\n"
)


def _kubeconfig(user: str, ca: str = "") -> str:
    return _KUBECONFIG.replace("USER", user).replace("CA", ca)


def _experiment(title: str) -> str:
    doc: dict[str, Any] = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    doc["title"] = "__TITLE__"
    return json.dumps(doc).replace("__TITLE__", title)  # JSON escapes, as written


def _results(field: str, value: str) -> str:
    doc: dict[str, Any] = json.loads(fixture("single-trial").read_text())
    doc["trials"][0][field] = "__VALUE__"
    return json.dumps(doc).replace('"__VALUE__"', value)


def _binary_inputs() -> list[Case]:
    app = ["--app", "{tmp}/app.yaml"]
    results = str(fixture("single-trial"))
    rows = [
        # (id, command, file name, fragment)
        ("webapp", ["deploy", "helm", "--app", "{tmp}/f", *NO_CLUSTER], "f", NOT_YAML),
        ("webapp-operator", ["deploy", "operator", "--app", "{tmp}/f", *NO_CLUSTER], "f", NOT_YAML),
        ("values", ["deploy", "helm", *app, "-f", "{tmp}/f", *NO_CLUSTER], "f", NOT_YAML),
        ("target", ["deploy", "helm", "--target", "{tmp}/f", *NO_CLUSTER], "f", NOT_YAML),
        ("policy", ["check", results, "--policy", "{tmp}/f"], "f", NOT_YAML),
        ("kubeconfig", ["status", "--kubeconfig", "{tmp}/f"], "f", NOT_YAML),
        (
            "experiment-yaml",
            ["run", "-e", "{tmp}/f.yaml", "--output", "{tmp}/out", *NO_CLUSTER],
            "f.yaml",
            NOT_YAML,
        ),
        ("results", ["report", "{tmp}/f"], "f", "not valid JSON"),
    ]
    cases = [
        Case(
            f"binary/{name}",
            args,
            {file: BINARY, "app.yaml": json.dumps(VALID_APP)},
            f"{file}: {fragment}",
        )
        for name, args, file, fragment in rows
    ]
    # The file the sweep used, as it is: its first NUL follows the first variable.
    cases.append(
        Case(
            "binary/proc-self-environ",
            ["deploy", "helm", "--app", "/proc/self/environ", *NO_CLUSTER],
            {},
            "/proc/self/environ: not ",
        )
    )
    return cases


def _text() -> list[Case]:
    run = ["run", "-e", "{tmp}/mine.json", "--output", "{tmp}/out", *NO_CLUSTER]
    app = (
        "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: NAME}\n"
        "spec: {image: 'shop:v1'}\n"
    )
    return [
        Case("text/title-nul", run, {"mine.json": _experiment("a\\u0000b")}, f"title: {NUL}"),
        Case(
            "text/title-surrogate",
            run,
            {"mine.json": _experiment("a\\ud800b")},
            f"mine.json: title: {SURROGATE}",
        ),
        Case(
            "text/journal-nul",
            ["report", "{tmp}/run", "-f", "html", "-o", "{tmp}/r.html"],
            {"run/results.json": _results("journal", '"journals/a\\u0000b.json"')},
            f"results.json: trials[0].journal: {NUL}",
        ),
        Case(
            "text/journal-surrogate",
            ["check", "{tmp}/run"],
            {"run/results.json": _results("journal", '"journals/\\udc80.json"')},
            "results.json: trials[0].journal: holds a lone surrogate (U+DC80",
        ),
        Case(
            "text/webapp-name-nul",
            ["deploy", "helm", "--app", "{tmp}/app.yaml", *NO_CLUSTER],
            {"app.yaml": app.replace("NAME", '"sh\\0op"')},
            f"app.yaml: metadata.name: {NUL}",
        ),
        Case(
            "text/webapp-name-surrogate",
            ["deploy", "helm", "--app", "{tmp}/app.yaml", *NO_CLUSTER],
            {"app.yaml": app.replace("NAME", '"sh\\ud800op"')},
            f"app.yaml: metadata.name: {SURROGATE}",
        ),
        Case(
            "text/policy-key-nul",
            ["check", str(fixture("single-trial")), "--policy", "{tmp}/p.yaml"],
            {"p.yaml": 'version: 1\n"a\\0": 1\nexpectations: []\n'},
            f"p.yaml: (top level): a key {NUL}",
        ),
    ]


def _target_values() -> list[Case]:
    deploy = ["deploy", "helm", "--target", "{tmp}/t.yaml", *NO_CLUSTER]
    values = ["deploy", "helm", "--app", "{tmp}/app.yaml", "-f", "{tmp}/v.yaml", *NO_CLUSTER]
    app = {"app.yaml": json.dumps(VALID_APP)}
    return [
        Case(
            "target-values/binary",
            deploy,
            {"t.yaml": _TARGET + "  values: {podLabels: {team: !!binary aGVsbG8=}}\n"},
            "t.yaml: helm.values.podLabels.team: a YAML !!binary value (bytes)",
        ),
        Case(
            "target-values/date",
            deploy,
            {"t.yaml": _TARGET + "  values: {podLabels: {built: 2026-12-06}}\n"},
            "t.yaml: helm.values.podLabels.built: 2026-12-06 was read as a YAML timestamp",
        ),
        Case(
            "target-values/timestamp",
            deploy,
            {"t.yaml": _TARGET + "  values: {podLabels: {at: 2026-12-06T10:00:00Z}}\n"},
            "helm.values.podLabels.at: 2026-12-06T10:00:00+00:00 was read as a YAML timestamp",
        ),
        Case(
            "target-values/int-key",
            deploy,
            {"t.yaml": _TARGET + "  values: {podLabels: {1: one}}\n"},
            "t.yaml: helm.values.podLabels: key 1 is a int, not a string",
        ),
        Case(
            "target-values/values-file-binary",
            deploy,
            {
                "t.yaml": _TARGET + "  valuesFiles: [v.yaml]\n",
                "v.yaml": "podLabels: {team: !!binary aGVsbG8=}\n",
            },
            "helm.valuesFiles[0]: ",
            also=("v.yaml: podLabels.team: a YAML !!binary value",),
        ),
        Case(
            "values/binary",
            values,
            {**app, "v.yaml": "podLabels: {team: !!binary aGVsbG8=}\n"},
            "v.yaml: podLabels.team: a YAML !!binary value (bytes)",
        ),
        Case(
            "values/date",
            values,
            {**app, "v.yaml": "podAnnotations: {built: 2026-12-06}\n"},
            "v.yaml: podAnnotations.built: 2026-12-06 was read as a YAML timestamp",
        ),
    ]


def _target_parts() -> list[Case]:
    """`parts` names what the faults act on: a name the chart's rendering does not hold, or a
    workload of a kind faults do not act on, is one line naming the key, before any cluster."""
    chart = Path(__file__).parents[2] / "fixtures" / "charts" / "parts-app"
    head = "apiVersion: compare.example.com/v1alpha1\nkind: Target\nname: shop\n"
    arm = f"helm:\n  chart: {{path: {chart}}}\n  release: shop\n"
    run = ["run", "--target", "{tmp}/t.yaml", "-a", "helm", "-e", "pod-delete-one", *NO_CLUSTER]
    return [
        Case(
            "target-parts/workload-absent",
            run,
            {"t.yaml": head + "parts: {workload: StatefulSet/shop-nope}\n" + arm},
            "t.yaml: parts.workload: StatefulSet/shop-nope is not in the app's manifest (its"
            " workloads: Deployment/shop-toolbox, StatefulSet/shop-server)",
        ),
        Case(
            "target-parts/workload-wrong-kind",
            run,
            {"t.yaml": head + "parts: {workload: Deployment/shop-server}\n" + arm},
            "t.yaml: parts.workload: Deployment/shop-server is not in the app's manifest",
        ),
        Case(
            "target-parts/service-absent",
            run,
            {"t.yaml": head + "parts: {service: shop}\n" + arm},
            "t.yaml: parts.service: shop is not in the app's manifest (its Services:"
            " shop-server-headless, shop-server)",
        ),
        Case(
            "target-parts/workload-kind",
            run,
            {"t.yaml": head + "parts: {workload: Job/shop-migrate}\n" + arm},
            "t.yaml: parts.workload: 'Job/shop-migrate': give Kind/name (Deployment,"
            " StatefulSet, DaemonSet) or a name",
        ),
        Case(
            "target-parts/unknown-key",
            run,
            {"t.yaml": head + "parts: {pod: shop-0}\n" + arm},
            "t.yaml: parts.pod: unknown field",
        ),
    ]


def _kubeconfigs() -> list[Case]:
    status = ["status", "--kubeconfig", "{tmp}/kc"]
    refused = "not a regular file (a device, FIFO or socket is not read)"
    return [
        Case(
            "kubeconfig-files/token-fifo",
            status,
            {"kc": _kubeconfig("{tokenFile: token}"), "token": FIFO},
            f"kc: users[u].user.tokenFile: {{tmp}}/token: {refused}",
        ),
        Case(
            "kubeconfig-files/token-dev-zero",
            status,
            {"kc": _kubeconfig("{tokenFile: /dev/zero}")},
            f"kc: users[u].user.tokenFile: /dev/zero: {refused}",
        ),
        Case(
            "kubeconfig-files/token-dev-zero-symlink",
            status,
            {"kc": _kubeconfig("{tokenFile: token}"), "token": DEV_ZERO},
            f"kc: users[u].user.tokenFile: {{tmp}}/token: {refused}",
        ),
        Case(
            "kubeconfig-files/token-too-large",
            status,
            {"kc": _kubeconfig("{tokenFile: token}"), "token": "x" * (1024 * 1024 + 1)},
            "kc: users[u].user.tokenFile: {tmp}/token: larger than 1 MiB",
        ),
        Case(
            "kubeconfig-files/client-certificate-dev-zero",
            status,
            {"kc": _kubeconfig("{client-certificate: /dev/zero, client-key: /dev/zero}")},
            f"kc: users[u].user.client-certificate: /dev/zero: {refused}",
        ),
        Case(
            "kubeconfig-files/client-key-fifo",
            status,
            {
                "kc": _kubeconfig("{client-certificate: c.pem, client-key: k}"),
                "c.pem": "x",
                "k": FIFO,
            },
            f"kc: users[u].user.client-key: {{tmp}}/k: {refused}",
        ),
        Case(
            "kubeconfig-files/ca-fifo",
            status,
            {"kc": _kubeconfig("{token: t}", ", certificate-authority: ca"), "ca": FIFO},
            f"kc: clusters[c].cluster.certificate-authority: {{tmp}}/ca: {refused}",
        ),
        Case(
            "kubeconfig-files/token-missing",
            status,
            {"kc": _kubeconfig("{tokenFile: none}")},
            "kc: users[u].user.tokenFile: {tmp}/none: no such file",
        ),
        Case(
            "kubeconfig-auth-provider/gcp",
            status,
            {"kc": _kubeconfig("{auth-provider: {name: gcp}}")},
            "kc: users[u].user.auth-provider 'gcp' is not supported",
        ),
        Case(
            "kubeconfig-auth-provider/azure",
            status,
            {"kc": _kubeconfig("{auth-provider: {name: azure, config: {}}}")},
            "kc: users[u].user.auth-provider 'azure' is not supported",
        ),
        Case(
            "kubeconfig-auth-provider/oidc-without-token",
            status,
            {"kc": _kubeconfig("{auth-provider: {name: oidc, config: {}}}")},
            "kc: Invalid kube-config file. Expected key id-token",
        ),
        Case(
            "kubeconfig-auth-provider/no-name",
            status,
            {"kc": _kubeconfig("{auth-provider: {}}")},
            "kc: users[u].user.auth-provider None is not supported",
        ),
    ]


def _output_paths() -> list[Case]:
    report = ["report", str(fixture("single-trial")), "-f", "md", "-o"]
    long_name = "r" * 300 + ".md"
    return [
        Case(
            "output-path/trailing-slash-on-a-file",
            [*report, "{tmp}/afile/"],
            {"afile": "a file of the user's\n"},
            "--output {tmp}/afile/: ends with '/' (a directory), but {tmp}/afile is a file",
        ),
        Case(
            "output-path/trailing-slash-new",
            [*report, "{tmp}/new/"],
            {},
            "--output {tmp}/new/: ends with '/', a directory; give a file's path",
        ),
        Case(
            "output-path/trailing-slash-directory",
            [*report, "{tmp}/dir/"],
            {"dir/keep": "x"},
            "--output {tmp}/dir/: ends with '/', a directory",
        ),
        Case(
            "output-path/name-too-long",
            [*report, "{tmp}/" + long_name],
            {},
            f"--output {{tmp}}/{long_name}: cannot write (File name too long)",
        ),
        Case(
            "output-path/html-name-too-long",
            ["report", str(fixture("single-trial")), "-f", "html", "-o", "{tmp}/" + long_name],
            {},
            "cannot write (File name too long)",
        ),
    ]


def third_sweep_cases() -> list[Case]:
    return [
        *_binary_inputs(),
        *_text(),
        *_target_values(),
        *_target_parts(),
        *_kubeconfigs(),
        *_output_paths(),
    ]
