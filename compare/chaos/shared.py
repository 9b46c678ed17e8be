"""One cluster-wide fault shared by the trials that run together: injected once, felt by all.

A fault that acts on the whole cluster (restart the API server, stop the controller manager,
stop the operator) cannot run beside unrelated trials, so its experiment runs alone in the run.
Its approaches' trials need not run one after another, though: started together, each in its
own namespace, they can go through *one* restart. That is fairer as well as shorter: every
approach meets the same fault at the same moment.

The trials of such a group play their experiments in parallel threads of one process. Each
cluster-wide action of this extension (`SHAREABLE`) goes through `perform`: a member that
reaches an action waits until every other member still in the group has reached it too; then
one performs it and all get its result (or its failure). So a rollback that starts the control
plane again waits until the last member's heal window is over. A member whose trial ends early
(deploy failed, steady state not met) leaves the group; those waiting on it go on. Outside a
group (`chaos run`, or a trial that runs alone) the action simply runs.

The group is named in the experiment's configuration (`CONFIG_KEY`, set by the run); an
experiment a user plays with `chaos run` has no such key.
"""

from __future__ import annotations

import secrets as _secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoslib.exceptions import ActivityFailed

__all__ = [
    "CONFIG_KEY",
    "SHAREABLE",
    "SharedFault",
    "can_share",
    "perform",
]

CONFIG_KEY = "compare_shared_fault"
# The actions that act on the cluster as a whole and know how to be shared (module, function).
SHAREABLE = frozenset(
    {
        ("compare.chaos.control_plane", "restart_control_plane_component"),
        ("compare.chaos.control_plane", "stop_control_plane_component"),
        ("compare.chaos.control_plane", "start_control_plane"),
        ("compare.chaos.actions", "stop_operator"),
        ("compare.chaos.actions", "start_operator"),
    }
)
# How long a member waits at an action for the others before it gives up (they are deploying,
# or in their heal window); set by the run from its deploy timeout and heal window.
DEFAULT_WAIT_S = 600.0
TICK_S = 0.2
# The configuration value that points an activity at its trial's own namespace.
TRIAL_NAMESPACE = "${webapp_namespace}"


@dataclass
class _Step:
    arrived: set[str] = field(default_factory=set)
    running: bool = False
    done: bool = False
    performer: str | None = None
    result: Any = None
    error: BaseException | None = None


class SharedFault:
    """The rendezvous of the trials that share one fault (thread-safe)."""

    def __init__(
        self,
        members: Collection[str],
        *,
        wait_s: float = DEFAULT_WAIT_S,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.id = _secrets.token_hex(6)
        self.members = tuple(members)
        self._active = set(members)
        self._wait_s = wait_s
        self._cancelled = cancelled
        self._cond = threading.Condition()
        self._steps: dict[str, _Step] = {}
        self._calls: dict[tuple[str, str], int] = {}

    def perform(self, member: str, action: str, fn: Callable[[], Any]) -> Any:
        """`fn()` once for the group, when every member still in it has reached `action`;
        what it returned (or raised) for every member. A member's n-th call of `action` meets
        the others' n-th call."""
        with self._cond:
            if member not in self._active:
                # Left already (its trial is an error): the group's own call does the work.
                return {"shared": {"skipped": f"{member} left the shared fault"}}
            nth = self._calls.get((member, action), 0)
            self._calls[member, action] = nth + 1
            step = self._steps.setdefault(f"{action}#{nth}", _Step())
            step.arrived.add(member)
            self._cond.notify_all()
            deadline = time.monotonic() + self._wait_s
            while not step.done:
                if not step.running and self._active <= step.arrived:
                    step.running, step.performer = True, member
                    break
                if self._cancelled is not None and self._cancelled.is_set():
                    raise ActivityFailed(f"{action}: the run was interrupted")
                if time.monotonic() > deadline:
                    late = ", ".join(sorted(self._active - step.arrived)) or "none"
                    raise ActivityFailed(
                        f"{action}: the trials sharing this fault did not all reach it within"
                        f" {self._wait_s:.0f}s (still waiting for: {late})"
                    )
                self._cond.wait(TICK_S)
            else:
                return self._outcome(step)
        try:
            step.result = fn()
        except BaseException as exc:  # every member fails alike, then it propagates
            step.error = exc
        with self._cond:
            step.done = True
            self._cond.notify_all()
        return self._outcome(step)

    def _outcome(self, step: _Step) -> Any:
        if step.error is not None:
            raise step.error
        if isinstance(step.result, dict):
            shared = {"members": len(self.members), "performedBy": step.performer}
            return {**step.result, "shared": shared}
        return step.result

    def leave(self, member: str) -> None:
        """`member`'s trial is over (or will not reach the fault): nobody waits for it."""
        with self._cond:
            self._active.discard(member)
            self._cond.notify_all()


# The groups of the running process, by id (their trials play in this process's threads).
_GROUPS: dict[str, tuple[SharedFault, str]] = {}
_GROUPS_LOCK = threading.Lock()


def join(fault: SharedFault, member: str) -> str:
    """The configuration value that makes `member`'s activities go through `fault`."""
    key = f"{fault.id}/{member}"
    with _GROUPS_LOCK:
        _GROUPS[key] = (fault, member)
    return key


def part(key: str) -> None:
    """`member` leaves its group and is forgotten here."""
    with _GROUPS_LOCK:
        entry = _GROUPS.pop(key, None)
    if entry is not None:
        entry[0].leave(entry[1])


def perform(configuration: Mapping[str, Any] | None, action: str, fn: Callable[[], Any]) -> Any:
    """Run the cluster-wide action `fn` as the trial's group shares it, or alone."""
    key = (configuration or {}).get(CONFIG_KEY)
    with _GROUPS_LOCK:
        entry = _GROUPS.get(key) if isinstance(key, str) else None
    if entry is None:
        return fn()
    fault, member = entry
    return fault.perform(member, action, fn)


def _acts_on_trial(activity: Mapping[str, Any]) -> bool:
    """Whether the activity is pointed at its trial's own namespace (an argument is
    `${webapp_namespace}`, or a process's arguments name it)."""
    provider = activity.get("provider") or {}
    arguments = provider.get("arguments")
    if isinstance(arguments, Mapping):
        return any(value == TRIAL_NAMESPACE for value in arguments.values())
    if isinstance(arguments, str):
        return TRIAL_NAMESPACE in arguments
    if isinstance(arguments, list):
        return any(isinstance(a, str) and TRIAL_NAMESPACE in a for a in arguments)
    return False


def can_share(document: Mapping[str, Any]) -> bool:
    """Whether the trials of this experiment's approaches can run together with its fault
    injected once: it has a shareable action, and every other activity of its method and
    rollbacks is pointed at its trial's own namespace. Anything else (an action of yours on
    the cluster, which would run once per trial) keeps its trials one at a time."""
    shareable = 0
    for key in ("method", "rollbacks"):
        for activity in document.get(key) or []:
            if not isinstance(activity, Mapping):
                return False
            provider = activity.get("provider") or {}
            where = (provider.get("module"), provider.get("func"))
            if provider.get("type") == "python" and where in SHAREABLE:
                shareable += 1
            elif "ref" in activity or activity.get("type") == "probe":
                continue  # a probe reads (chaostoolkit's contract); a ref is checked where named
            elif not _acts_on_trial(activity):
                return False
    return shareable > 0
