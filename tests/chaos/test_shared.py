"""A fault shared by the trials of a group: performed once, when every member reached it.

Plain threads and functions: the rendezvous itself has no Kubernetes in it (the run that
uses it against the embedded cluster is tests/run/test_catalogue_run.py)."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed

from compare.chaos import shared
from compare.chaos.shared import SharedFault, can_share
from compare.run.experiments import load_spec


def _play(fault: SharedFault, steps: dict[str, list[tuple[str, float]]]) -> dict[str, Any]:
    """Each member plays its steps (action, seconds of its own work before it) in a thread;
    returns who got what and the order actions were performed in."""
    performed: list[tuple[str, float]] = []
    results: dict[str, list[Any]] = {m: [] for m in steps}
    errors: dict[str, BaseException] = {}
    lock = threading.Lock()

    def act(action: str) -> Any:
        with lock:
            performed.append((action, time.monotonic()))
        return {"action": action}

    def member(name: str) -> None:
        try:
            for action, before in steps[name]:
                time.sleep(before)
                results[name].append(fault.perform(name, action, functools.partial(act, action)))
        except BaseException as exc:  # recorded for the test
            errors[name] = exc
        finally:
            fault.leave(name)

    threads = [threading.Thread(target=member, args=(m,)) for m in steps]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return {"performed": performed, "results": results, "errors": errors}


def test_an_action_is_performed_once_when_the_last_member_reaches_it() -> None:
    fault = SharedFault(["a", "b", "c"])
    started = time.monotonic()
    out = _play(
        fault,
        {
            "a": [("stop", 0.0), ("start", 0.0)],
            "b": [("stop", 0.3), ("start", 0.0)],
            "c": [("stop", 0.0), ("start", 0.6)],  # the longest "heal window"
        },
    )
    assert not out["errors"]
    assert [a for a, _ in out["performed"]] == ["stop", "start"]
    stop_at, start_at = (at - started for _, at in out["performed"])
    assert stop_at >= 0.3  # b was last to reach it
    assert start_at >= 0.9  # nobody started it again before c's window was over
    for name in "abc":
        assert [r["action"] for r in out["results"][name]] == ["stop", "start"]
        assert all(r["shared"]["members"] == 3 for r in out["results"][name])
    performers = {r["shared"]["performedBy"] for name in "abc" for r in out["results"][name]}
    assert performers <= {"a", "b", "c"}


def test_a_member_that_leaves_is_not_waited_for() -> None:
    fault = SharedFault(["a", "b"])
    out = _play(fault, {"a": [("restart", 0.0)], "b": []})  # b's deploy failed
    assert not out["errors"]
    assert [a for a, _ in out["performed"]] == ["restart"]


def test_a_failure_is_every_members_failure() -> None:
    fault = SharedFault(["a", "b"])
    seen: dict[str, BaseException] = {}

    def member(name: str) -> None:
        try:
            fault.perform(name, "restart", lambda: (_ for _ in ()).throw(ActivityFailed("boom")))
        except ActivityFailed as exc:
            seen[name] = exc
        finally:
            fault.leave(name)

    threads = [threading.Thread(target=member, args=(m,)) for m in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert set(seen) == {"a", "b"} and all(str(e) == "boom" for e in seen.values())


def test_waiting_is_bounded_and_says_for_whom() -> None:
    fault = SharedFault(["a", "b"], wait_s=0.3)
    with pytest.raises(ActivityFailed, match=r"within 0s \(still waiting for: b\)"):
        fault.perform("a", "restart", lambda: None)


def test_an_interrupted_run_ends_the_wait() -> None:
    cancelled = threading.Event()
    fault = SharedFault(["a", "b"], cancelled=cancelled)
    threading.Timer(0.2, cancelled.set).start()
    with pytest.raises(ActivityFailed, match="interrupted"):
        fault.perform("a", "restart", lambda: None)


def test_outside_a_group_the_action_runs_alone() -> None:
    assert shared.perform(None, "x", lambda: "ran") == "ran"
    assert shared.perform({"other": 1}, "x", lambda: "ran") == "ran"
    fault = SharedFault(["a"])
    key = shared.join(fault, "a")
    out = shared.perform({shared.CONFIG_KEY: key}, "x", lambda: {"done": True})
    assert out == {"done": True, "shared": {"members": 1, "performedBy": "a"}}
    shared.part(key)
    # Gone from the group: a later call (a rollback) leaves the work to the group.
    assert "skipped" in fault.perform("a", "y", lambda: {"done": True})["shared"]


@pytest.mark.parametrize(
    ("name", "shares"),
    [
        ("apiserver-restart-drift", True),
        ("etcd-restart-drift", True),
        ("controller-manager-down", True),
        ("operator-down-drift", True),
        ("image-change", False),  # no cluster-wide action at all
    ],
)
def test_the_catalogue_experiments_that_can_share_their_fault(name: str, shares: bool) -> None:
    spec = load_spec(name)
    assert can_share(spec.document) is shares


def _activity(kind: str, module: str, func: str, arguments: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "name": func,
        "provider": {"type": "python", "module": module, "func": func, "arguments": arguments},
    }


def test_an_action_of_yours_on_the_cluster_keeps_the_trials_apart() -> None:
    restart = _activity(
        "action", "compare.chaos.control_plane", "restart_control_plane_component", {}
    )
    drift = _activity(
        "action",
        "chaosk8s.deployment.actions",
        "scale_deployment",
        {"ns": "${webapp_namespace}", "replicas": 1},
    )
    mine = _activity("action", "mychaos.nodes", "drain_node", {"name": "node-1"})
    probe = _activity("probe", "mychaos.metrics", "latency", {})
    assert can_share({"method": [restart, drift, probe]})
    assert not can_share({"method": [restart, drift, mine]})
    assert not can_share({"method": [restart], "rollbacks": [mine]})
    assert not can_share({"method": [drift]})
    shell = {
        "type": "action",
        "name": "k",
        "provider": {
            "type": "process",
            "path": "kubectl",
            "arguments": "delete pod -n ${webapp_namespace} --all",
        },
    }
    assert can_share({"method": [restart, shell]})
