"""The ground truth: one default `compare run`: the whole catalogue against the three approaches.

Real cluster, real helm, the real operator process, the real Flux controllers, real
chaostoolkit, the closed-world judge.
Helm heals what the Deployment/ReplicaSet controllers heal (pods, the ReplicaSet) and nothing
else; an unowned annotation is no fault for either. The operator heals closed-world: every
drift the judge sees, drift made while it was stopped, deleted children (new UIDs), and it
comes back from a SIGKILL (its supervisor restarts it with its identity, so it takes its own
Lease back at once), and what no patch can heal: a pod changed in place (it deletes the pod,
its ReplicaSet makes a new one) and a headless copy of the Service (it deletes and re-creates
it: clusterIP is immutable). The control-plane faults run first, each alone in the run and injected
once for the three approaches' trials: with the controller manager stopped nobody replaces
deleted pods, whatever the approach; after an etcd restart the operator heals the drift. Flux
(helm-controller with drift detection) never removes what someone *added* and recreates
deleted objects (new UIDs); a value it manages that someone changed comes back at its next
interval plus a rollout, which on two busy cores may or may not fit the window, so those are
checked for what does not depend on the load.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.operator.controllers import operator_status
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.cluster.embedded import COMPONENTS
from compare.deploy.charts import webapp_manifest
from compare.results import RunResults, TrialResult, latest_run, load_results
from compare.results.writers import by_kubernetes
from compare.run.engine import DEFAULT_PARALLEL
from compare.run.experiments import CATALOGUE as EVERY_FAULT
from compare.run.experiments import load_experiments
from compare.run.runner import epoch
from compare.run.trial import RUN_LABEL
from compare.run.workload import workload_of
from compare.webapp import load_webapp
from webapp_operator.names import FIELD_MANAGER as OPERATOR_MANAGER

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]

# The WebApp's parts, as its chart renders them.
PARTS = workload_of(webapp_manifest(load_webapp()))
# Faults on parts the WebApp has not (a StatefulSet, a ConfigMap, ...): skipped with the reason.
SKIPPED = {
    spec.name: spec.unmet(embedded=True, workload=PARTS)
    for spec in load_experiments()
    if spec.unmet(embedded=True, workload=PARTS) is not None
}
CATALOGUE = [name for name in EVERY_FAULT if name not in SKIPPED]
HEAL_WINDOW = 10.0  # a pod-template heal is two rollouts; operator-down-drift a restart
HELM_HEALS = {"pod-delete-one", "pod-delete-all", "replicaset-delete"}
NO_FAULT = {"annotation-add", "rollout-restart"}
OPERATOR_ONLY = {"operator-down-drift", "operator-kill-drift"}
# What no approach heals: a Service held being deleted by a foreign finalizer, an
# EndpointSlice someone else added for the Service.
NOBODY_HEALS = {
    "service-stuck-terminating": "service: being deleted",
    "service-foreign-endpointslice": "service: EndpointSlice",
}
# What no patch can heal, healed by the operator alone: a pod changed in place (only its
# replacement is the template's: the operator deletes it, its ReplicaSet makes a new one) and a
# headless copy of the Service (clusterIP is immutable: the operator deletes and re-creates it).
# Helm and Flux leave both.
ONLY_THE_OPERATOR_REPLACES = {
    "pod-image-in-place": "pod[",
    "service-recreated-headless": "service.spec.clusterIP: want an IP address",
}
HELM_KEEPS_BROKEN = (
    set(CATALOGUE)
    - HELM_HEALS
    - NO_FAULT
    - OPERATOR_ONLY
    - set(NOBODY_HEALS)
    - set(ONLY_THE_OPERATOR_REPLACES)
)
CONTROL_PLANE = ("apiserver-restart-drift", "etcd-restart-drift", "controller-manager-down")
# How long the API server takes to answer again after a SIGKILL depends on this machine's
# load; checked for what does not depend on it (see experiments/policy.yaml).
MACHINE_BOUND = {"apiserver-restart-drift"}
# With kube-controller-manager stopped no ReplicaSet controller makes pods: deleted pods stay
# deleted whatever reconciles the Deployment.
OPERATOR_NOT_HEALED = {"controller-manager-down"}
NOT_HEALS = NO_FAULT | OPERATOR_NOT_HEALED | MACHINE_BOUND | set(NOBODY_HEALS)
OPERATOR_HEALS = [f for f in CATALOGUE if f not in NOT_HEALS]
DELETIONS = {"deployment-delete": "deployment", "service-delete": "service"}
# helm-controller's drift detection diffs a dry-run apply of the fields it manages: added
# fields, containers, volumes, labels (and a port changed in a list keyed by port) stay.
FLUX_KEEPS_ADDED = {
    "env-add",
    "container-add",
    "container-command-add",
    "capability-add",
    "pod-host-network",
    "volume-add",
    "deployment-paused",
    "strategy-recreate",
    "min-ready-seconds",
    "deployment-label-add",
    "service-port-change",
    "service-session-affinity",
}
FLUX_HEALS = HELM_HEALS | set(DELETIONS)
# A managed value changed: corrected at the next interval (5 s) plus the rollout.
FLUX_INTERVAL_BOUND = (
    set(CATALOGUE)
    - FLUX_KEEPS_ADDED
    - FLUX_HEALS
    - NO_FAULT
    - OPERATOR_ONLY
    - OPERATOR_NOT_HEALED
    - set(NOBODY_HEALS)
    - set(ONLY_THE_OPERATOR_REPLACES)
)


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    output: str
    run_dir: Path
    results: RunResults

    def trial(self, experiment: str, approach: str) -> TrialResult:
        found = self.results.trials_of(experiment, approach)
        assert len(found) == 1, f"{experiment}/{approach}: {found}"
        return found[0]


@pytest.fixture(scope="module")
def outcome(cluster: ClusterTarget, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    out = tmp_path_factory.mktemp("reports")
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--heal-window",
            str(HEAL_WINDOW),
            "--output",
            str(out),
        ],
    )
    run_dir = latest_run(out)
    yield Outcome(result.exit_code, result.output, run_dir, load_results(run_dir))


def test_the_run_is_complete_and_valid(outcome: Outcome) -> None:
    assert outcome.exit_code == 0, outcome.output
    r = outcome.results
    assert r.complete and r.finished_at is not None
    assert r.settings.experiments == list(CATALOGUE)
    assert r.settings.approaches == ["helm", "operator", "flux"]
    assert r.settings.heal_window_seconds == HEAL_WINDOW
    assert r.settings.parallel == DEFAULT_PARALLEL
    assert r.settings.approach_settings == {"flux": {"intervalSeconds": 5.0}}
    # Flux's trials wait one jittered interval longer (its cadence); the others the window.
    windows = r.settings.heal_windows or {}
    assert {n: w.heal_window_seconds for n, w in windows.items()} == {
        "helm": HEAL_WINDOW,
        "operator": HEAL_WINDOW,
        "flux": HEAL_WINDOW + 5.25,
    }
    assert {t.heal_window_seconds for t in r.trials if t.approach == "flux"} == {HEAL_WINDOW + 5.25}
    # operator-down-drift and operator-kill-drift apply to the operator only: 34 + 36 + 34.
    assert len(r.trials) == 104
    assert {t.status for t in r.trials} <= {"healed", "not-healed", "no-fault"}, [
        (t.label, t.error) for t in r.trials if t.status == "error"
    ]
    assert [e.name for e in r.experiments] == list(CATALOGUE)
    # Left out before anything ran, each with its reason (listed by every report).
    assert {s.name: s.reason for s in r.skipped or []} == SKIPPED
    assert "Skipped (not run against this app or cluster)" in outcome.output
    assert all(e.builtin and e.path == f"experiments/{e.name}.json" for e in r.experiments)


def test_the_summary_table_is_printed(outcome: Outcome) -> None:
    assert "│ fault" in outcome.output and "│ operator" in outcome.output
    # 31, and 30 when the API server's restart outlasted the window (machine-bound).
    healed = 31 if outcome.trial("apiserver-restart-drift", "operator").status == "healed" else 30
    assert f"operator healed {healed}/36 faults" in outcome.output
    assert "helm healed 3/34 faults (0 by the approach, 3 by Kubernetes itself)" in outcome.output
    flux = sum(t.status == "healed" for t in outcome.results.trials if t.approach == "flux")
    assert flux >= len(FLUX_HEALS)
    assert f"flux healed {flux}/34 faults" in outcome.output


@pytest.mark.parametrize("experiment", sorted(HELM_HEALS))
def test_helm_heals_pod_and_replicaset_deletions_with_new_objects(
    outcome: Outcome, experiment: str
) -> None:
    t = outcome.trial(experiment, "helm")
    assert t.status == "healed", t.evidence.mismatches_at_end
    assert t.time_to_heal_seconds is not None and 0 < t.time_to_heal_seconds <= HEAL_WINDOW
    ev = t.evidence
    assert ev.uids_before is not None and ev.uids_after is not None
    new_pods = set(ev.uids_after.pods) - set(ev.uids_before.pods)
    assert new_pods, "healed without a single new pod uid"
    assert ev.ready_pods == ev.desired_replicas == 3
    assert ev.mismatches_at_end == []
    # Kubernetes' own controllers wrote the heal, never Helm (nothing of Helm runs).
    assert by_kubernetes(ev.healed_by), ev.healed_by
    if experiment == "replicaset-delete":
        assert ev.uids_after.replicaset != ev.uids_before.replicaset
        assert "replicaset" in ev.recreated
    if experiment == "pod-delete-all":
        assert not set(ev.uids_after.pods) & set(ev.uids_before.pods)


@pytest.mark.parametrize("experiment", sorted(HELM_KEEPS_BROKEN))
def test_helm_leaves_every_drift_and_deleted_object_unhealed(
    outcome: Outcome, experiment: str
) -> None:
    t = outcome.trial(experiment, "helm")
    assert t.status == "not-healed"
    assert t.time_to_heal_seconds is None and t.time_to_detect_seconds is None
    ev = t.evidence
    assert ev.mismatches_at_end, "not healed, yet nothing differs?"
    assert ev.before != ev.during and ev.during == ev.after, (ev.before, ev.during, ev.after)
    if experiment in DELETIONS:
        assert (ev.before, ev.after) == ("present", "absent")


@pytest.mark.parametrize("experiment", sorted(NO_FAULT))
@pytest.mark.parametrize("approach", ["helm", "operator", "flux"])
def test_an_unowned_annotation_is_no_fault(
    outcome: Outcome, approach: str, experiment: str
) -> None:
    # rollout-restart causes a whole rollout: fewer Ready pods for a while, yet no fault.
    t = outcome.trial(experiment, approach)
    assert t.status == "no-fault" and t.time_to_heal_seconds is None
    assert t.evidence.fault_seen is None


@pytest.mark.parametrize("experiment", sorted(NOBODY_HEALS))
@pytest.mark.parametrize("approach", ["helm", "operator", "flux"])
def test_what_nobody_heals_is_seen_and_not_healed(
    outcome: Outcome, approach: str, experiment: str
) -> None:
    t = outcome.trial(experiment, approach)
    assert t.evidence.fault_seen is not None
    assert t.status == "not-healed", (t.status, t.error, t.evidence.mismatches_at_end)
    assert any(NOBODY_HEALS[experiment] in m for m in t.evidence.mismatches_at_end)


@pytest.mark.parametrize("experiment", sorted(ONLY_THE_OPERATOR_REPLACES))
@pytest.mark.parametrize("approach", ["helm", "flux"])
def test_what_only_the_operator_replaces_is_seen_and_not_healed_by_the_others(
    outcome: Outcome, approach: str, experiment: str
) -> None:
    t = outcome.trial(experiment, approach)
    assert t.evidence.fault_seen is not None
    assert t.status == "not-healed", (t.status, t.error, t.evidence.mismatches_at_end)
    assert any(ONLY_THE_OPERATOR_REPLACES[experiment] in m for m in t.evidence.mismatches_at_end)


@pytest.mark.parametrize("experiment", OPERATOR_HEALS)
def test_the_operator_heals_the_drift_it_owns(outcome: Outcome, experiment: str) -> None:
    t = outcome.trial(experiment, "operator")
    assert t.status == "healed", t.evidence.mismatches_at_end
    assert t.time_to_heal_seconds is not None and t.time_to_heal_seconds <= HEAL_WINDOW
    ev = t.evidence
    assert ev.mismatches_at_end == [] and ev.ready_pods == 3
    if experiment == "service-recreated-headless":
        # clusterIP, the tracked field: a new allocation of the re-created Service.
        assert ev.after not in (None, "None", ev.during), (ev.before, ev.during, ev.after)
    else:
        assert ev.after == ev.before
    # Who wrote the heal: Kubernetes for what it heals under any approach, the operator and
    # then Kubernetes for the pod the operator deleted (its Event says so; its ReplicaSet made
    # the new one), else the operator.
    if experiment in HELM_HEALS:
        assert by_kubernetes(ev.healed_by), ev.healed_by
    elif experiment == "pod-image-in-place":
        assert ev.healed_by == [OPERATOR_MANAGER, "kube-controller-manager"], ev.healed_by
    else:
        assert ev.healed_by == [OPERATOR_MANAGER], ev.healed_by
    kind = DELETIONS.get(experiment)
    if experiment == "pod-image-in-place":
        assert ev.uids_before is not None and ev.uids_after is not None
        assert set(ev.uids_after.pods) - set(ev.uids_before.pods), "no new pod"
        assert ev.detected_by == "Event PodReplaced", ev
    elif experiment == "service-recreated-headless":
        assert ev.uids_before is not None and ev.uids_after is not None
        assert ev.uids_after.service != ev.uids_before.service
        assert "service" in ev.recreated
        # The injection deletes the Service before its copy takes the name: the operator may
        # create one first (Created), and it re-creates the headless copy (Recreated).
        assert ev.detected_by in ("Event Created", "Event Recreated"), ev
    elif kind is not None:
        assert ev.uids_before is not None and ev.uids_after is not None
        assert getattr(ev.uids_after, kind) != getattr(ev.uids_before, kind)
        assert kind in ev.recreated
        assert ev.detected_by == "Event Created"
    elif experiment not in HELM_HEALS and experiment != "operator-kill-drift":
        # Drift the operator itself corrected: its Event times the detection. (Not after a
        # SIGKILL: the killed process may have healed it and died before posting its Event.)
        assert ev.detected_by == "Event DriftCorrected", ev
        assert t.time_to_detect_seconds is not None


def test_drift_while_the_operator_was_down_heals_after_the_restart(
    outcome: Outcome, cluster: ClusterTarget
) -> None:
    t = outcome.trial("operator-down-drift", "operator")
    assert t.evidence.target == "operator"
    assert (t.evidence.before, t.evidence.during, t.evidence.after) == (3, 1, 3)
    # Nothing reconciled while the operator was down: the drift was seen before the heal.
    assert t.evidence.detected_by == "Event DriftCorrected"
    status = operator_status(cluster)
    assert status is not None and status.running


def test_the_control_plane_faults_ran_alone_once_for_all_approaches_and_left_the_cluster_whole(
    outcome: Outcome, cluster: ClusterTarget
) -> None:
    trials = outcome.results.trials
    wide = [t for t in trials if t.experiment in CONTROL_PLANE]
    assert len(wide) == 9
    for name in CONTROL_PLANE:
        group = [t for t in wide if t.experiment == name]
        journals = [json.loads((outcome.run_dir / str(t.journal)).read_text()) for t in group]
        faults = [j["run"][0] for j in journals]
        starts = [j["rollbacks"][0] for j in journals]
        for t, fault, start in zip(group, faults, starts, strict=True):
            assert fault["status"] == "succeeded", (t.label, fault)
            assert start["status"] == "succeeded", t.label
        # One fault for the three approaches: performed once (one new pid), every journal
        # saying so; the control plane started again once, after every heal window.
        outputs = [f["output"] for f in faults]
        assert {o["shared"]["members"] for o in outputs} == {3}, outputs
        assert len({o["shared"]["performedBy"] for o in outputs}) == 1, outputs
        assert len({o.get("newPid") for o in outputs}) == 1, outputs
        if name != "controller-manager-down":
            assert all(o["newPid"] != o["oldPid"] for o in outputs), outputs
        restarted = max(epoch(s["end"]) for s in starts)
        for t in group:
            assert t.injected_at is not None
            assert t.injected_at.timestamp() + HEAL_WINDOW <= restarted + 0.5, t.label
        # They ran on the run's fault cluster (a sibling made for it), not on the run's own.
        assert {t.cluster for t in group} == {fault_cluster(outcome)}, [t.cluster for t in group]
        # Nothing else ran meanwhile on that cluster: no trial of another experiment there
        # injected inside it (the other trials went on, on the run's cluster).
        began = min(epoch(f["start"]) for f in faults)
        for other in trials:
            if (
                other.experiment != name
                and other.cluster == group[0].cluster
                and other.injected_at is not None
            ):
                assert not began <= other.injected_at.timestamp() <= restarted, (name, other.label)
    embedded = EmbeddedCluster(cluster_key(cluster))
    assert all(embedded.component_pid(name) is not None for name in COMPONENTS)
    # The fault cluster went with the run.
    assert not EmbeddedCluster(fault_cluster(outcome)).status().exists


def fault_cluster(outcome: Outcome) -> str:
    """The name of the run's fault cluster: the run's cluster's, then its run id."""
    names = {t.cluster for t in outcome.results.trials if t.cluster is not None}
    assert len(names) == 1, names
    (name,) = names
    assert name.endswith(outcome.results.run_id.lower()), name
    return name


@pytest.mark.parametrize("approach", ["helm", "operator", "flux"])
def test_with_the_controller_manager_stopped_deleted_pods_stay_deleted(
    outcome: Outcome, approach: str
) -> None:
    t = outcome.trial("controller-manager-down", approach)
    assert t.status == "not-healed", (t.status, t.error)
    ev = t.evidence
    assert ev.fault_seen is not None
    assert (ev.before, ev.after, ev.ready_pods) == (3, 0, 0)
    assert ev.mismatches_at_end == ["pods.ready: want 3, got 0"]
    assert ev.uids_after is not None and ev.uids_after.pods == []


def test_after_the_api_server_restart_the_drift_was_seen_and_judged(outcome: Outcome) -> None:
    t = outcome.trial("apiserver-restart-drift", "operator")
    assert t.status in ("healed", "not-healed"), (t.status, t.error)
    assert t.evidence.fault_seen is not None and t.evidence.during == 1
    if t.status == "healed":
        assert t.evidence.detected_by == "Event DriftCorrected"
    else:
        assert t.evidence.mismatches_at_end == ["deployment.spec.replicas: want 3, got 1"]


def test_a_sigkilled_operator_comes_back_at_once_and_heals(outcome: Outcome) -> None:
    t = outcome.trial("operator-kill-drift", "operator")
    assert t.status == "healed", (t.status, t.error, t.evidence.mismatches_at_end)
    ev = t.evidence
    assert (ev.before, ev.during, ev.after) == (3, 1, 3) and ev.fault_seen is not None
    # Not after a lease duration (15 s): the restarted replica takes its own Lease back.
    assert t.time_to_heal_seconds is not None and t.time_to_heal_seconds < 15


@pytest.mark.parametrize("experiment", sorted(FLUX_KEEPS_ADDED))
def test_flux_leaves_what_someone_added(outcome: Outcome, experiment: str) -> None:
    t = outcome.trial(experiment, "flux")
    assert t.status == "not-healed", (t.status, t.error)
    ev = t.evidence
    assert ev.fault_seen is not None and ev.mismatches_at_end
    assert ev.before != ev.during and ev.during == ev.after, (ev.before, ev.during, ev.after)


@pytest.mark.parametrize("experiment", sorted(FLUX_HEALS))
def test_flux_heals_deleted_objects_with_new_uids(outcome: Outcome, experiment: str) -> None:
    t = outcome.trial(experiment, "flux")
    assert t.status == "healed", (t.status, t.error, t.evidence.mismatches_at_end)
    ev = t.evidence
    assert ev.mismatches_at_end == [] and ev.ready_pods == 3
    assert ev.uids_before is not None and ev.uids_after is not None
    kind = DELETIONS.get(experiment)
    if kind is not None:
        # helm-controller's correction created them again.
        assert getattr(ev.uids_after, kind) != getattr(ev.uids_before, kind)
        assert ev.healed_by == ["helm-controller"], ev.healed_by
        assert ev.detected_by == "Event DriftDetected (seen at arrival)"
    else:
        assert set(ev.uids_after.pods) - set(ev.uids_before.pods)


@pytest.mark.parametrize("experiment", sorted(FLUX_INTERVAL_BOUND))
def test_flux_reverts_a_changed_value_or_the_evidence_says_why_not(
    outcome: Outcome, experiment: str
) -> None:
    t = outcome.trial(experiment, "flux")
    assert t.status in ("healed", "not-healed"), (t.status, t.error)
    ev = t.evidence
    assert ev.fault_seen is not None and ev.before != ev.during
    if t.status == "healed":
        # helm-controller corrected it (its DriftDetected Event), to the value from before.
        assert ev.after == ev.before and ev.mismatches_at_end == []
        assert ev.detected_by == "Event DriftDetected (seen at arrival)"
    else:
        # Not within the window: still drifted at its end, or corrected just after it (then
        # the end reading holds, and no heal time is claimed).
        assert t.time_to_heal_seconds is None


def test_the_journals_are_chaostoolkit_journals(outcome: Outcome) -> None:
    disagreeing: list[str] = []
    for t in outcome.results.trials:
        assert t.journal == f"journals/{t.experiment}-{t.approach}-{t.trial}.json"
        journal = json.loads((outcome.run_dir / t.journal).read_text())
        assert journal["chaoslib-version"] and journal["experiment"]["title"]
        name = (t.evidence.model_extra or {})["injection"]
        injection = next(r for r in journal["run"] if r["activity"]["name"] == name)
        assert injection["status"] == "succeeded"
        # The injection instant in results.json is the journal's end of the injection activity.
        assert t.injected_at is not None
        assert t.injected_at.isoformat() == injection["end"]
        # chaostoolkit's own verdict agrees with ours - except for a Flux correction that
        # landed just after the window: chaostoolkit's steady-state probe, which runs after the
        # window, sees it healed (the report lists such a trial under "chaostoolkit disagrees").
        # Any other disagreement is recorded in the evidence (chaosAgrees) and listed by the
        # report; on two loaded cores a few operator trials healed and settled by the judge's
        # watch were seen deviated by chaostoolkit's own later probe (3 of 267 in a --trials 3
        # run): allowed as recorded evidence, never silently, and only as a rare exception.
        late = t.approach == "flux" and t.experiment in FLUX_INTERVAL_BOUND
        agrees = journal["deviated"] == (t.status == "not-healed")
        assert t.evidence.chaos_agrees is agrees, t.label
        if not agrees and not (late and t.status == "not-healed"):
            disagreeing.append(t.label)
    assert len(disagreeing) <= 2, disagreeing
    if disagreeing:
        assert "chaostoolkit disagrees" in outcome.output


def test_the_run_removed_its_namespaces(outcome: Outcome, api: client.ApiClient) -> None:
    selector = f"{RUN_LABEL}={outcome.results.run_id}"
    left = client.CoreV1Api(api).list_namespace(label_selector=selector).items
    assert all(ns.status.phase == "Terminating" for ns in left), [ns.metadata.name for ns in left]
