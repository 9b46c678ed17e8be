"""Planning a run with a fault cluster (pure parts): which experiments move, how their trials
are pointed at it, when they may start, how the sibling is named and configured."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
import yaml
from chaosk8s import create_k8s_api_client

from compare.approaches import builtin_target, load_target
from compare.chaos.cluster import cluster_target, listable, pointed_at, trial_secrets
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.cluster.embedded import ControlPlaneArg, check_cluster_name
from compare.paths import EXAMPLES_DIR, EXPERIMENTS_DIR
from compare.run.app import App
from compare.run.engine import RunRequest, admissible, plan_trials, schedule
from compare.run.experiments import load_experiments
from compare.run.sibling import SECRETS_SCOPE, movable, point, splittable
from compare.run.trial import TrialPlan
from tests.run.builders import WEBAPP

# The catalogue's `scope: cluster` experiments: the control plane's and the operator's faults.
WIDE = (
    "apiserver-restart-drift",
    "etcd-restart-drift",
    "controller-manager-down",
    "operator-down-drift",
    "operator-kill-drift",
)


def _plans(*names: str) -> list[TrialPlan]:
    request = RunRequest(
        approaches=("helm", "operator", "flux"),
        experiments=tuple(load_experiments(names)),
        app=App(builtin_target(WEBAPP, Path("app.yaml"))),
        output_dir=Path("out"),
    )
    return schedule(plan_trials(request))


def test_the_catalogues_cluster_wide_faults_move_and_nothing_else() -> None:
    specs = {s.name: s for s in load_experiments(())}
    moved = {name for name, spec in specs.items() if movable(spec)}
    assert moved == set(WIDE)
    assert all(specs[name].cluster_wide for name in WIDE)


def test_an_experiment_with_a_process_activity_stays_on_the_runs_cluster(tmp_path: Path) -> None:
    # A process reads the environment (the run's cluster): its trial cannot be pointed.
    data = json.loads((EXPERIMENTS_DIR / "etcd-restart-drift.json").read_text())
    data["method"].insert(
        1, {"type": "action", "name": "note", "provider": {"type": "process", "path": "true"}}
    )
    path = tmp_path / "etcd-restart-noted.json"
    path.write_text(json.dumps(data))
    (spec,) = load_experiments([str(path)])
    assert spec.cluster_wide and not movable(spec)


def test_a_split_needs_moved_and_other_experiments_and_an_app_started_per_cluster() -> None:
    app = App(builtin_target(WEBAPP, Path("app.yaml")))
    assert splittable(app, load_experiments(["etcd-restart-drift", "image-change"]))
    assert not splittable(app, load_experiments(["etcd-restart-drift"]))
    assert not splittable(app, load_experiments(["image-change", "pod-delete-one"]))


def test_a_targets_app_keeps_its_cluster_wide_faults_on_the_runs_cluster() -> None:
    # Its preflight (an operator installed once, CRDs) is per run, not per cluster.
    assert App(builtin_target(WEBAPP, Path("app.yaml"))).per_cluster
    assert not App(load_target(EXAMPLES_DIR / "target-shop.yaml")).per_cluster


def test_pointing_gives_every_python_activity_the_secrets_last() -> None:
    (spec,) = load_experiments(["controller-manager-down"])
    document = spec.fresh_document()
    document["secrets"] = {"mine": {"KUBERNETES_CONTEXT": "other"}}
    first = document["method"][0]["provider"]
    first["secrets"] = ["mine"]
    point(document, {"KUBECONFIG": "/k", "KUBERNETES_CONTEXT": "kwok-x"})
    assert document["secrets"][SECRETS_SCOPE] == {
        "KUBECONFIG": "/k",
        "KUBERNETES_CONTEXT": "kwok-x",
    }
    assert document["secrets"]["mine"] == {"KUBERNETES_CONTEXT": "other"}
    assert first["secrets"] == ["mine", SECRETS_SCOPE]  # read last: it wins
    hypothesis = document["steady-state-hypothesis"]["probes"]
    for activity in [*hypothesis, *document["method"], *document["rollbacks"]]:
        assert SECRETS_SCOPE in activity["provider"]["secrets"], activity["name"]


def test_moved_trials_run_one_group_at_a_time_beside_the_others() -> None:
    plans = _plans("apiserver-restart-drift", "etcd-restart-drift", "image-change")
    apart = frozenset({"apiserver-restart-drift", "etcd-restart-drift"})
    api = [p for p in plans if p.experiment.name == "apiserver-restart-drift"]
    etcd = [p for p in plans if p.experiment.name == "etcd-restart-drift"]
    image = [p for p in plans if p.experiment.name == "image-change"]
    # The others start at once, whatever runs or waits on the fault cluster ...
    assert admissible(image[0], plans, [], apart=apart)
    assert admissible(image[1], plans, [api[0], api[1]], apart=apart)
    # ... and the moved ones beside them, one group at a time (a group starts together).
    assert admissible(api[0], plans, image, apart=apart)
    assert not admissible(api[1], plans, [api[0], *image], apart=apart)
    assert not admissible(etcd[0], plans, [api[2], image[0]], apart=apart)
    assert admissible(etcd[0], etcd, image, apart=apart)
    # Without a fault cluster: alone in the run, as before.
    assert not admissible(image[0], plans, [], apart=())
    assert not admissible(api[0], plans, image[:1], apart=())


def test_a_moved_trial_names_its_cluster_for_its_activities(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({"current-context": "kwok-x", "clusters": []}))
    secrets = trial_secrets(ClusterTarget(kubeconfig, None, embedded=True))
    assert secrets == {"KUBECONFIG": str(kubeconfig), "KUBERNETES_CONTEXT": "kwok-x"}
    # The kubeconfig's own current context is no context: the same target as the file alone.
    target = cluster_target(secrets)
    assert target.kubeconfig == kubeconfig and target.context is None
    other = cluster_target({**secrets, "KUBERNETES_CONTEXT": "kwok-y"})
    assert other.context == "kwok-y"


@pytest.mark.parametrize("main", ["compare", "h28", "a" * 40])
def test_the_sibling_is_named_after_the_cluster_and_the_run(main: str) -> None:
    sibling = EmbeddedCluster(main).sibling("20261205t060246z-ced6")
    assert check_cluster_name(sibling.name) == sibling.name
    assert sibling.name.endswith("-20261205t060246z-ced6")
    assert sibling.name.startswith(main[:18])


def test_the_sibling_gets_the_clusters_control_plane_configuration(tmp_path: Path) -> None:
    source = EmbeddedCluster("h28")
    source.cluster_dir = tmp_path
    patches = [
        {
            "name": "kube-controller-manager",
            "extraArgs": [{"key": "kube-api-qps", "value": "300"}],
            "extraEnvs": [{"name": "GOGC", "value": "200"}],
        },
        # `up` gives every cluster its Service range: not replayed.
        {
            "name": "kube-apiserver",
            "extraArgs": [{"key": "service-cluster-ip-range", "value": "x"}],
        },
    ]
    config = {"kind": "KwokctlConfiguration", "componentsPatches": patches}
    (tmp_path / "kwok.yaml").write_text(yaml.safe_dump(config))
    assert source.configured_args() == [
        ControlPlaneArg("kube-controller-manager", "kube-api-qps", "300"),
        ControlPlaneArg("kube-controller-manager", "env:GOGC", "200"),
    ]


def _kubeconfig(folder: Path, name: str, port: int) -> Path:
    """A kubeconfig as kwokctl writes one (context, cluster and user `kwok-<name>`)."""
    pki = folder / name
    pki.mkdir()
    for part in ("ca.crt", "admin.crt", "admin.key"):
        (pki / part).write_text("")
    key = f"kwok-{name}"
    data = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": key,
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority": str(pki / "ca.crt"),
                },
            }
        ],
        "contexts": [{"name": key, "context": {"cluster": key, "user": key}}],
        "current-context": key,
        "users": [
            {
                "name": key,
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_chaosk8s_reaches_the_runs_cluster_by_default_and_the_sibling_by_its_secrets(
    tmp_path: Path,
) -> None:
    # chaosk8s's own client factory, as its activities call it: the run's trials (no
    # secrets) must reach the run's cluster even with the sibling's kubeconfig listed.
    main = _kubeconfig(tmp_path, "main", 1111)
    sibling = _kubeconfig(tmp_path, "main-run", 2222)
    listed = tmp_path / "listed.yaml"
    listed.write_text(listable(sibling.read_text()))
    secrets = trial_secrets(ClusterTarget(sibling, None, embedded=True))
    with pointed_at(ClusterTarget(main, None, embedded=True), listed):
        assert create_k8s_api_client().configuration.host == "https://127.0.0.1:1111"
        pointed = create_k8s_api_client(secrets)
        assert pointed.configuration.host == "https://127.0.0.1:2222"
        assert create_k8s_api_client().configuration.host == "https://127.0.0.1:1111"


def _clients_from_two_threads(secrets: dict[str, str], rounds: int) -> list[str]:
    """chaosk8s's client factory called from two threads at once, as a run's activities call
    it (the module attribute: what an activity module imported from now on gets): one thread
    for the run's cluster (no secrets), one for the sibling; the hosts each got that were not
    its own."""
    import chaosk8s

    wrong: list[str] = []
    want = {"main": "https://127.0.0.1:1111", "sibling": "https://127.0.0.1:2222"}

    def build(who: str) -> None:
        for _ in range(rounds):
            host = chaosk8s.create_k8s_api_client(secrets if who == "sibling" else None)
            if host.configuration.host != want[who]:
                wrong.append(f"{who} got {host.configuration.host}")

    threads = [threading.Thread(target=build, args=(who,)) for who in want]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    return wrong


def test_chaosk8s_clients_built_at_once_reach_their_own_clusters(tmp_path: Path) -> None:
    # chaosk8s loads a kubeconfig into the client's process-wide default, then copies it:
    # built from two threads at once, a client may get the other thread's load. Inside
    # `pointed_at` the factory is called one at a time; outside, the original is back.
    import chaosk8s

    original = chaosk8s.create_k8s_api_client
    main = _kubeconfig(tmp_path, "main", 1111)
    sibling = _kubeconfig(tmp_path, "main-run", 2222)
    listed = tmp_path / "listed.yaml"
    listed.write_text(listable(sibling.read_text()))
    secrets = trial_secrets(ClusterTarget(sibling, None, embedded=True))
    with pointed_at(ClusterTarget(main, None, embedded=True), listed):
        assert chaosk8s.create_k8s_api_client is not original
        assert _clients_from_two_threads(secrets, rounds=300) == []
    assert chaosk8s.create_k8s_api_client is original
