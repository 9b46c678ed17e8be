"""`compare run --target FILE -a operator` with an operator that is not the WebApp's: the
test fixture operator of tests/fixtures/operators/cache, whose `Cache` resource owns a
StatefulSet, its headless Service and a ConfigMap, running as a local process
(`alreadyInstalled`).

The preflight finds the app's parts among the objects the Cache owns; each trial applies the
Cache in its namespace, holds its children to the baseline taken once it is Ready, and the
operator must heal what it owns: a changed ConfigMap value and a deleted ConfigMap (a new
uid), a changed image and an added env var on the StatefulSet's pod template; deleted pods
come back through the StatefulSet controller (`<name>-0` with a new uid). A fault for a
Deployment only and one on a Service label the operator never sets are skipped with the
reason; no trial is an `error`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results

from .cache_target import TARGET, cache_operator

__all__ = ["cache_operator"]  # the fixture, used by name below

runner = CliRunner()
HEALED = (
    "statefulset-pod-delete",
    "pod-delete-one",
    "configmap-data-change",
    "configmap-delete",
    "image-change",
    "env-add",
)
# Skipped with the reason: a fault for a Deployment only, and one that removes a Service label
# the operator never sets (the JSON patch would be refused: an error, not a verdict).
SKIPPED = {
    "deployment-paused": "applies to a Deployment only (the app's is StatefulSet sessions)",
    "service-label-remove": (
        "needs service.metadata.labels[app.kubernetes.io/component] (the operator's baseline"
        " of owned objects has none to change)"
    ),
}
CONTAINER = "statefulset.spec.template.spec.containers[cache]"
POLICY = {
    "version": 1,
    "requireComplete": True,
    "expectations": [
        {
            "approach": "operator",
            "faults": "all",
            "kinds": ["StatefulSet", "ConfigMap", "Pod"],
            "expect": "heals",
            "within": 9,
            "reason": "the Cache operator restores what it owns; the StatefulSet its pods",
        }
    ],
}


@pytest.mark.cluster
def test_an_operator_with_a_statefulset_and_a_configmap_heals_what_it_owns(
    cluster: ClusterTarget, tmp_path: Path, cache_operator: Path
) -> None:
    out = tmp_path / "reports"
    chosen = [arg for name in (*HEALED, *SKIPPED) for arg in ("-e", name)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(TARGET), "-a", "operator", *chosen, "--heal-window", "8"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    log = cache_operator.read_text(errors="replace")[-3000:]
    assert result.exit_code == 0, (result.output, log)
    assert (
        "preflight: the target's custom resources own StatefulSet sessions and Service sessions"
        in result.output
    )
    # The skipped lines print as they are (`labels[...]` is no rich markup); the summary names
    # the app by its custom resource's kind.
    for name, reason in SKIPPED.items():
        assert f"skipped {name}: {reason}" in result.output
    assert "Cache cache; 1 trial per fault and approach;" in result.output
    run_dir = latest_run(out)
    results = load_results(run_dir)
    assert results.complete and results.target is not None and results.target.name == "cache"
    assert results.app.kind == "Cache"
    trials = {t.experiment: t for t in results.trials}
    assert set(trials) == set(HEALED)
    assert [t for t in results.trials if t.status == "error"] == [], log
    for name in HEALED:
        trial = trials[name]
        assert trial.approach == "operator"
        assert trial.status == "healed", (name, trial.error, trial.evidence.mismatches_at_end)
        assert trial.evidence.fault_seen is not None, name
        assert trial.evidence.chaos_agrees is True, name

    # A deleted pod: `sessions-0` back, the same name with a new uid, Ready.
    pod = trials["statefulset-pod-delete"].evidence
    assert pod.uids_before is not None and pod.uids_after is not None
    assert len(pod.uids_before.pods) == len(pod.uids_after.pods) == 2
    assert len(set(pod.uids_after.pods) - set(pod.uids_before.pods)) == 1
    assert pod.ready_pods == 2 and "pod" in pod.recreated
    # Ready before the fault: counted on the StatefulSet as listed when the trial began (a
    # listed object is judged as a watched one), not only once an event brought it again.
    assert pod.before == 2 and pod.during == 1 and pod.after == 2

    # The ConfigMap's value put back by the operator, and the deleted one made again.
    data = trials["configmap-data-change"].evidence
    assert data.field == "configmap.data" and data.during == {"cache.conf": "chaos"}
    assert (
        data.before
        == data.after
        == {"cache.conf": "maxmemory 64mb\nmaxmemory-policy allkeys-lru\n"}
    )
    # The StatefulSet untouched since the trial's list: its pods still counted Ready.
    assert data.ready_pods == 2
    deleted = trials["configmap-delete"].evidence
    assert deleted.target == "configmap" and deleted.during == "absent"
    assert deleted.uids_before is not None and deleted.uids_after is not None
    before, after = deleted.uids_before.model_dump(), deleted.uids_after.model_dump()
    assert before["configmap"] and after["configmap"] and before["configmap"] != after["configmap"]

    # Faults written for any workload act on the StatefulSet and its container.
    image = trials["image-change"].evidence
    assert image.target == "statefulset" and image.field == f"{CONTAINER}.image"
    assert image.before == image.after == "cache:7.2" != image.during
    env = trials["env-add"].evidence
    assert env.field == f"{CONTAINER}.env" and env.before is None and env.after is None
    assert env.during

    # The operator said what it corrected, on the Cache (its Events).
    assert "put back as desired" in cache_operator.read_text(errors="replace")

    # Skipped, not errors, with the reason.
    assert {s.name: s.reason for s in results.skipped or []} == SKIPPED
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    check = runner.invoke(app, ["check", str(run_dir), "--policy", str(policy)])
    assert check.exit_code == 0, check.output
    assert "policy holds" in check.stdout
