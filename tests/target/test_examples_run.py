"""Every example target file in examples/ runs in the suite, with every arm it has.

The files are found by glob (every `kind: Target` under examples/), so a new example is covered
without a line here. Each runs `compare run --target FILE` with one fault (`pod-delete-one`: a
real trial per arm, healed by Kubernetes' own ReplicaSet controller under every approach) for
the arms the cluster can run. What the arm's install implies decides, never the file's name:
an operator installed into the cluster (`kustomize:` / `chart:`) whose objects run pods cannot
reconcile on the embedded cluster (pods run no code there), so there the whole file, run as a
user would (no `-a`), is refused in one line within seconds, before any arm is deployed; an
`alreadyInstalled` operator of the toolkit's WebApps is the toolkit's own, started here first.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare import approaches as registry
from compare.approaches import load_target
from compare.approaches.arms import install_namespace
from compare.approaches.operator.arm import install_documents
from compare.cli import app
from compare.cluster import ClusterTarget, is_local
from compare.deploy.chart_target import is_target_file
from compare.paths import EXAMPLES_DIR
from compare.results import latest_run, load_results
from compare.results.writers import by_kubernetes
from compare.target import Operator, Target
from compare.webapp import API_GROUP, API_VERSION, KIND
from tests.helpers import assert_stopped_in_preflight

from .operator_targets import namespace_names, one_error_line, webapp_operator

__all__ = ["webapp_operator"]  # the fixture, asked for by name below

pytestmark = pytest.mark.cluster
runner = CliRunner()

EXAMPLES = sorted(path for path in EXAMPLES_DIR.glob("*.yaml") if is_target_file(path))
EXPERIMENT = "pod-delete-one"
REFUSAL_S = 30.0
# What makes pods, or is one: code that runs only where pods do.
RUNS_PODS = frozenset(
    {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}
)


def test_the_examples_are_found() -> None:
    # The glob finds the target files (not the policy, nor the WebApp manifest).
    names = [path.name for path in EXAMPLES]
    assert "target-webapp.yaml" in names and "target-shop.yaml" in names
    assert "target-policy.yaml" not in names and "webapp.yaml" not in names


def _operator(target: Target, name: str) -> Operator | None:
    arm = registry.get(name).arm(target)
    return arm if isinstance(arm, Operator) else None


def _cannot_run_here(cluster: ClusterTarget, target: Target, name: str) -> bool:
    """An operator installed into the cluster whose objects run pods, on the embedded one."""
    operator = _operator(target, name)
    if operator is None or operator.install.form not in ("kustomize", "chart"):
        return False
    documents = install_documents(target, operator, install_namespace(target))
    return is_local(cluster) and any(doc.get("kind") in RUNS_PODS for doc in documents)


def _needs_the_toolkits_operator(target: Target, names: list[str]) -> bool:
    """An `alreadyInstalled` operator arm: its operator must run before the run. Of the
    toolkit's WebApps, that is the toolkit's own; of any other kind, the example says which
    operator this suite would have to start."""
    for name in names:
        operator = _operator(target, name)
        if operator is None or operator.install.form != "alreadyInstalled":
            continue
        kinds = {(str(r["apiVersion"]), str(r["kind"])) for r in operator.resources}
        if kinds != {(f"{API_GROUP}/{API_VERSION}", KIND)}:
            pytest.fail(f"{target.source}: an alreadyInstalled operator of {sorted(kinds)}")
        return True
    return False


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_an_example_target_runs_with_every_arm_it_has(
    path: Path,
    cluster: ClusterTarget,
    api: client.ApiClient,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    target = load_target(path)
    arms = list(target.arms)
    refused = [name for name in arms if _cannot_run_here(cluster, target, name)]
    runnable = [name for name in arms if name not in refused]
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]

    if refused:
        # The file as the README runs it (every arm): one line, before any arm is deployed.
        namespaces = namespace_names(api)
        out = tmp_path / "refused"
        started = time.monotonic()
        result = runner.invoke(
            app,
            ["run", "--target", str(path), "-e", EXPERIMENT, "--output", str(out), *kubeconfig],
        )
        took = time.monotonic() - started
        line = one_error_line(result, 2)
        assert line.startswith(f"{path}: operator.install."), line
        assert "runs its manager in pods, and pods run no code on the embedded cluster: use" in line
        assert "operator.install.process" in line and "--kubeconfig" in line
        assert took < REFUSAL_S, f"refused after {took:.1f}s"
        assert_stopped_in_preflight(out, line)  # nothing ran: the run's results say why
        assert namespace_names(api) <= namespaces  # nothing deployed, not even a scratch namespace

    if not runnable:
        return
    if _needs_the_toolkits_operator(target, runnable):
        request.getfixturevalue("webapp_operator")
    out = tmp_path / "reports"
    chosen = [arg for name in runnable for arg in ("-a", name)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(path), *chosen, "-e", EXPERIMENT),
            *("--output", str(out), *kubeconfig),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert results.complete and results.skipped == []
    assert results.target is not None and results.target.name == target.name
    assert sorted(results.settings.approaches) == sorted(runnable)
    # One real trial per arm: a pod deleted, a new one made (Kubernetes' own controllers).
    assert {t.approach: (t.experiment, t.status) for t in results.trials} == {
        name: (EXPERIMENT, "healed") for name in runnable
    }, [(t.approach, t.status, t.error) for t in results.trials]
    for trial in results.trials:
        gone, made = trial.evidence.uids_before, trial.evidence.uids_after
        assert gone is not None and made is not None, trial.approach
        assert set(gone.pods) - set(made.pods) and set(made.pods) - set(gone.pods), trial.approach
        # Whatever deploys the app, the ReplicaSet controller made the new pod.
        assert by_kubernetes(trial.evidence.healed_by), (trial.approach, trial.evidence.healed_by)
