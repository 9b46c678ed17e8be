"""A fifth approach from a package of its own: `reapply` (tests/approaches/reapply: its chart
arm applied server-side, then applied again every two seconds by a local process of its own),
registered for these tests only (`compare.approaches.registered`: the rest of the suite sees
the four built-in ones). Nothing outside that package knows it, yet it

- passes the shared contract tests (tests/approaches/test_contract.py: the same functions,
  with it as their parameter);
- gets `compare deploy reapply`, `compare status` rows and `compare undeploy reapply`;
- runs a `compare run -a reapply` trial: an image change seen and healed by the re-apply.

Its controller is stopped and its state dropped when the module's tests are done: no process
is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import (
    REGISTRY,
    default_names,
    desired_objects,
    forget_cluster,
    get,
    names,
    register,
    registered,
)
from compare.cli import app, run_cmd
from compare.cluster import ClusterTarget
from compare.errors import CompareError
from compare.judge import problems, read
from compare.results import latest_run, load_results
from compare.webapp import load_webapp
from tests.approaches import test_contract as contract
from tests.approaches.reapply import controllers
from tests.approaches.reapply.approach import Reapply
from tests.helpers import deploy_builtin, eventually, make_webapp, undeploy_builtin

BUILT_IN = ("helm", "operator", "flux", "argocd")
# Seconds its controller may take to set a drifted field back: one interval, a pass, a margin.
HEALED_WITHIN_S = 15.0
APP = """\
apiVersion: example.com/v1
kind: WebApp
metadata:
  name: shop
spec:
  replicas: 1
  image: shop:v1
  port: 8080
"""
runner = CliRunner()


@pytest.fixture(scope="module")
def reapply() -> Iterator[Reapply]:
    """The fifth approach, registered while this module's tests run."""
    with registered(Reapply()) as approach:
        yield approach


@pytest.fixture(scope="module")
def controlled(reapply: Reapply, cluster: ClusterTarget) -> Iterator[Reapply]:
    """The approach on the cluster: its controller (started by the tests, as a run or a deploy
    starts it) stopped at the end and its state dropped - nothing of it outlives the module."""
    try:
        yield reapply
    finally:
        # The lifecycle every approach's local controllers share: what `compare cluster down`
        # does for each registered approach (`forget_cluster`).
        forget_cluster(cluster)
    assert controllers.running(cluster) is None
    assert not controllers.state_dir(cluster).exists()


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(APP)
    return path


# -- registration ------------------------------------------------------------------------------


def test_registered_it_comes_after_the_built_in_ones(reapply: Reapply) -> None:
    assert names() == (*BUILT_IN, "reapply")
    assert get("reapply") is reapply and REGISTRY[-1] is reapply
    # Not part of a default run: it is asked for by name.
    assert default_names() == ("helm", "operator", "flux")
    # A name or a short already registered is refused.
    with pytest.raises(CompareError, match="'reapply'"):
        register(Reapply())


def test_registered_for_a_block_only(reapply: Reapply) -> None:
    class Again(Reapply):
        name = "reapply-again"  # type: ignore[misc]
        short = "again"  # type: ignore[misc]

    before = names()
    with registered(Again()):
        assert names() == (*before, "reapply-again")
        # The commands follow the registry: a registered approach has them ...
        listing = runner.invoke(app, ["deploy", "--help"])
        assert "reapply-again" in listing.output, listing.output
    assert names() == before
    # ... and an unregistered one has them no more.
    assert "reapply-again" not in runner.invoke(app, ["deploy", "--help"]).output
    assert runner.invoke(app, ["deploy", "reapply-again"]).exit_code == 2


# -- the shared contract tests, with the fifth approach as their parameter ----------------------


def test_settings_travel_with_the_instance(reapply: Reapply) -> None:
    contract.test_settings_travel_with_the_instance(reapply)


def test_desired_describes_the_app_without_a_cluster(reapply: Reapply) -> None:
    contract.test_desired_describes_the_app_without_a_cluster(reapply)


def test_a_detector_names_kinds_and_reasons(reapply: Reapply) -> None:
    contract.test_a_detector_names_kinds_and_reasons(reapply)


@pytest.mark.cluster
def test_deploy_status_undeploy_round_trip(
    controlled: Reapply, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    contract.test_deploy_status_undeploy_round_trip(controlled, cluster, api, namespace)


@pytest.mark.cluster
def test_cleanup_then_the_namespace_goes_and_leaves_nothing(
    controlled: Reapply, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    contract.test_cleanup_then_the_namespace_goes_and_leaves_nothing(
        controlled, cluster, api, namespace
    )


@pytest.mark.cluster
def test_status_judges_a_release_by_its_own_name_and_values(
    controlled: Reapply, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    contract.test_status_judges_a_release_by_its_own_name_and_values(
        controlled, cluster, api, namespace
    )


# -- what makes it an approach: its controller heals drift of what the manifest sets ------------


@pytest.mark.cluster
def test_its_controller_sets_a_drifted_field_back(
    controlled: Reapply, cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("shop", replicas=1)
    controlled.prepare(cluster)
    deploy_builtin(cluster, controlled, webapp, namespace)
    try:
        apps = client.AppsV1Api(api)
        apps.patch_namespaced_deployment("shop", namespace, {"spec": {"replicas": 3}})
        desired = desired_objects(api, controlled.name, webapp, namespace)

        def holds() -> bool:
            return problems(desired, read(api, namespace, desired.kinds)) == []

        eventually(holds, timeout=HEALED_WITHIN_S, what="the replicas set back to 1")
    finally:
        undeploy_builtin(cluster, controlled, webapp, namespace)


# -- its commands, through the CLI ------------------------------------------------------------


@pytest.mark.cluster
def test_compare_deploy_status_undeploy(
    controlled: Reapply,
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    app_file: Path,
) -> None:
    kube = ["--kubeconfig", str(cluster.kubeconfig)]
    where = ["-n", namespace, *kube]

    deployed = runner.invoke(app, ["deploy", "reapply", "--app", str(app_file), *where])
    assert deployed.exit_code == 0, deployed.output
    assert f"reapply manifest shop in namespace {namespace}: desired state holds" in (
        deployed.output
    )
    desired = desired_objects(api, "reapply", load_webapp(app_file), namespace)
    assert problems(desired, read(api, namespace, desired.kinds)) == []
    # `deploy` started its controller (`prepare`), which now keeps it so.
    assert controllers.running(cluster) is not None

    status = runner.invoke(app, ["status", *where])
    assert status.exit_code == 0, status.output
    row = [line for line in status.output.splitlines() if "reapply" in line]
    assert len(row) == 1 and "shop" in row[0] and "holds" in row[0], status.output
    assert "re-applied manifests: none" not in status.output

    removed = runner.invoke(app, ["undeploy", "reapply", "--app", str(app_file), *where])
    assert removed.exit_code == 0, removed.output
    after = runner.invoke(app, ["status", *where])
    assert "re-applied manifests: none" in after.output, after.output
    assert controlled.status(cluster, api, namespace) == []


# -- a `compare run` trial ---------------------------------------------------------------------


@pytest.mark.cluster
def test_a_run_trial_sees_an_image_change_healed_by_the_reapply(
    controlled: Reapply, cluster: ClusterTarget, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "-a", "reapply", "-e", "image-change", "--trials", "1"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    # `compare run` was imported (above, at collection) before the approach was registered,
    # as in a session of the whole suite: `--approach` takes it all the same (it reads the
    # registry when the command runs), and its default approaches stay the built-in ones.
    assert "reapply" not in run_cmd.DEFAULT_APPROACHES
    results = load_results(latest_run(out))
    assert results.complete and results.settings.approaches == ["reapply"]
    [trial] = results.trials
    assert (trial.approach, trial.experiment) == ("reapply", "image-change")
    assert trial.status == "healed", (trial.error, trial.evidence.mismatches_at_end)
    assert trial.evidence.fault_seen is not None
    assert trial.time_to_heal_seconds is not None
    # Its trial window is the heal window plus one interval and a pass (its cadence).
    assert trial.heal_window_seconds == results.settings.heal_window_seconds + 3.0
