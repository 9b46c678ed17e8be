"""The observer: a list+watch of the trial's namespace turns the fault and the heal into events.

Every event the API server sends for the namespace's objects of the kinds the judge reads
(Deployments, Services, ReplicaSets, pods, and every kind of the desired objects) updates the
watch cache, and the trial's judge reads the cache at once: the observation
is timed on receipt, in the API server's order, with no poll resolution. The observer's own
thread only decides when to stop: when the heal has held for the settle period, or when the
heal window (plus a settle period that began inside it) has passed. Waiting costs no CPU.
Nothing after that decision is part of the trial: an experiment's rollbacks run while the
watch is still open, and one that restores what the fault broke (the controller manager started
again) must not read as a late heal.

Every `recheck` seconds it also re-reads the namespace in full (list calls with request
timeouts). That cross-checks the watch against a missed event (a listed object the cache
never received is a disagreement, recorded in the evidence, and the re-read state is then
judged too) and tells a cluster that stopped answering: two failed re-reads in a row, a
watch that cannot reconnect for `STALL_S`, or - at the end of the trial - a failed last read
or a watch still failing end the trial as an error, never as `not-healed`. At each re-read
and at the end the cluster's own components are checked too (`compare.run.health`: the
controller manager, the scheduler, kwok): one down is an error naming it.
A trial always has a reading after the injection started: when the watch has delivered none
(the injection changed nothing, so no event came) once it may have caught up (`CATCH_UP_S`
after the injection's end), the observer takes a fresh reading (list calls) and the trial is
not decided before it has one. The last re-read alone cannot be relied on for it: on a loaded
machine it may end after the trial's time, and then it is not the trial's end state.
Before the injection starts, an outage is the experiment's own doing (a control-plane fault
restarts the API server or etcd first, then injects the drift): the watch reconnects from its
resourceVersion and only failures from the injection on count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from kubernetes import client

from compare.errors import first_line
from compare.judge import NamespaceWatch, Reading, read
from compare.judge.kinds import WATCHED
from compare.judge.reading import Obj
from compare.kube import poll
from compare.run.evidence import Observation, TrialJudge, healing_since, settle_start

STALL_S = 5.0  # a watch unable to reconnect this long: the cluster stopped answering
MAX_READ_FAILURES = 2
CATCH_UP_S = 1.0  # how long the watch may lag a re-read before it counts as a missed event
RETRY_S = 0.5  # before a failed fresh reading is tried again


class ObserverError(Exception):
    """The live state could not be read: the trial is an error, not a verdict."""


class Observer(threading.Thread):
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        *,
        window: float,
        settle: float,
        recheck: float,
        cancel: threading.Event,
        kinds: Sequence[str] = WATCHED,
        health: Callable[[], list[str]] | None = None,
    ) -> None:
        super().__init__(name=f"observe-{namespace}", daemon=True)
        # The cluster's own components (`compare.run.health`): one down from the injection on
        # makes the trial an error.
        self.health = health
        self.api = api
        self.namespace = namespace
        self.window = window
        self.settle = settle
        self.recheck = recheck
        self.cancel = cancel
        self.judge: TrialJudge | None = None
        self.observations: list[Observation] = []
        self.error: str | None = None
        self.rereads = 0
        self.disagreements: list[str] = []
        self.observed_until = 0.0
        # Every kind the desired state holds (a chart's ServiceAccounts, ClusterRoles, ...),
        # plus what the rollout rule reads: an unwatched kind would read as missing.
        self.kinds = tuple(kinds)
        self._watch = NamespaceWatch(api, namespace, on_change=self._changed, kinds=self.kinds)
        self._cond = threading.Condition()
        self._injection_started: float | None = None
        self._injected: float | None = None
        self._over = False
        # The fresh reading taken when the watch had none after the injection (at most one).
        self._fresh_taken = False
        # Set once the trial is decided: later events (a rollback restoring what the fault
        # broke, after the window) are not part of the trial.
        self._decided = False

    # -- set-up and signals from the trial ------------------------------------------------

    def begin(self, make_judge: Callable[[Reading], TrialJudge]) -> TrialJudge:
        """List the namespace, fix the judge on that baseline, start following events."""
        baseline = self._watch.start()
        judge = make_judge(baseline)
        self.judge = judge
        # Anything that changed between the list and now is in the cache: judge it once. (Never
        # take the watch's lock while holding ours: its callbacks take ours under its lock.)
        first = judge.observe(self._watch.reading(), time.time(), "")
        with self._cond:
            self.observations.append(first)
            self.observations.sort(key=lambda o: o.at)
        self.start()
        return judge

    def injected(self, started: float, at: float) -> None:
        """The injection activity ran from `started` to `at` (time.time())."""
        with self._cond:
            self._injection_started, self._injected = started, at
            self._cond.notify_all()

    def experiment_over(self) -> None:
        with self._cond:
            self._over = True
            self._cond.notify_all()

    def finish(self, timeout: float) -> None:
        """Wait for the observer to decide, then stop the watch (bounded)."""
        self.join(timeout)
        if self.is_alive() and self.error is None:
            self.error = f"the observer did not finish within {timeout:.0f}s"
        self._watch.stop()

    # -- events -----------------------------------------------------------------------------

    def _changed(self, received: float, reading: Reading, what: str) -> None:
        judge = self.judge
        if judge is None:
            return
        with self._cond:
            if self._decided:
                return
        obs = judge.observe(reading, received, what)
        with self._cond:
            if self._decided:
                return
            self.observations.append(obs)
            self._cond.notify_all()

    # -- the decision loop ------------------------------------------------------------------

    def run(self) -> None:
        next_check = time.time() + self.recheck
        failures = 0
        try:
            while not self.cancel.is_set():
                now = time.time()
                with self._cond:
                    fresh = self._fresh_due()
                if fresh is not None and now >= fresh:
                    failures = self._fresh_reading(failures)
                    continue
                if now >= next_check:
                    failures = self._reread(failures)
                    next_check = time.time() + self.recheck
                    continue
                stalled = self._counted(self._watch.failing_since)
                if stalled is not None and now - stalled > STALL_S:
                    raise ObserverError(
                        f"the cluster stopped answering: {self._watch.errors[-1]}"
                        if self._watch.errors
                        else "the cluster stopped answering"
                    )
                with self._cond:
                    wake = self._decide(now)
                    if wake is None:
                        self._decided = True
                        break
                    self._cond.wait(max(min(wake, next_check) - time.time(), 0.0))
            self._final_reread()
            # The last seconds count as much as the first: an outage that began just before
            # the decision is an error too, never a late `not-healed`.
            self._check_health()
            stalled = self._counted(self._watch.failing_since)
            if stalled is not None and self._watch.errors:
                raise ObserverError(
                    f"the cluster stopped answering at the end: {self._watch.errors[-1]}"
                )
        except ObserverError as exc:
            self.error = str(exc)
        finally:
            self.observed_until = time.time()

    def _decide(self, now: float) -> float | None:
        """None when the trial is decided; else when to look again (time.time())."""
        if self._injected is None:
            return None if self._over else now + self.recheck
        assert self._injection_started is not None
        fresh = self._fresh_due()
        if fresh is not None:
            return fresh  # never decided without a reading after the injection
        deadline = self._injected + self.window
        heal_start = healing_since(
            [o for o in self.observations if o.at >= self._injection_started]
        )
        if heal_start is not None and heal_start <= deadline:
            settled_at = settle_start(heal_start, self._injected) + self.settle
            return None if now >= settled_at else settled_at
        return None if now >= deadline else deadline

    def _fresh_due(self) -> float | None:
        """When a fresh reading is due (None: none is); call with `_cond` held."""
        return fresh_reading_due(
            self.observations, self._injection_started, self._injected, taken=self._fresh_taken
        )

    def _fresh_reading(self, failures: int) -> int:
        """The watch has no reading after the injection: list the namespace once. Stamped
        with the read's start (what it lists is at least that new), so that an event that
        came in meanwhile is never ordered after an older state. Failures count as a
        re-read's do."""
        begun = time.time()
        try:
            listed = read(self.api, self.namespace, self.kinds)
        except Exception as exc:
            failures += 1
            if failures >= MAX_READ_FAILURES:
                raise ObserverError(f"the cluster stopped answering: {first_line(exc)}") from exc
            self.cancel.wait(RETRY_S)
            return failures
        judge = self.judge
        with self._cond:
            self._fresh_taken = True
            started = self._injection_started
        if judge is None or started is None:
            return 0
        obs = judge.observe(listed, max(begun, started))
        with self._cond:
            # An event that came in meanwhile is a reading of its own: both stand, in time
            # order (the decision reads them in list order).
            self.observations.append(obs)
            self.observations.sort(key=lambda o: o.at)
            self._cond.notify_all()
        return 0

    def _counted(self, since: float | None) -> float | None:
        """A failure's start as it counts: never before the injection started (None: the
        injection has not started, so nothing counts yet)."""
        with self._cond:
            started = self._injection_started
        if since is None or started is None:
            return None
        return max(since, started)

    def _reread(self, failures: int) -> int:
        """One full re-read: liveness and the cross-check of the watch cache."""
        try:
            listed = read(self.api, self.namespace, self.kinds)
        except Exception as exc:
            if self._counted(time.time()) is None:
                return 0  # before the injection: the experiment's own outage
            failures += 1
            if failures >= MAX_READ_FAILURES:
                raise ObserverError(f"the cluster stopped answering: {first_line(exc)}") from exc
            return failures
        self.rereads += 1
        self._cross_check(listed)
        self._check_health()
        return 0

    def _check_health(self) -> None:
        """Raise when a component of the cluster is down after the injection started."""
        if self.health is None or self._counted(time.time()) is None:
            return
        try:
            down = self.health()
        except Exception as exc:  # a check that cannot tell is no proof the cluster was up
            down = [f"its health could not be checked: {first_line(exc)}"]
        if down:
            raise ObserverError(f"the cluster was not fully up: {'; '.join(down)}")

    def _final_reread(self) -> None:
        # The end of the trial is always cross-checked once against a full read, which is
        # also the last reading (a trial in which nothing happened has no event after it).
        try:
            listed = read(self.api, self.namespace, self.kinds)
        except Exception as exc:
            if self._counted(time.time()) is None:
                return  # never injected: no verdict rests on it
            raise ObserverError(
                f"the cluster stopped answering at the end: {first_line(exc)}"
            ) from exc
        self.rereads += 1
        missed = self._cross_check(listed)
        judge = self.judge
        with self._cond:
            injected = self._injected
        if injected is not None and listed.at > injected + self.window + self.settle:
            return  # read after the trial's time (a late thread): not the trial's end state
        if judge is not None and not missed:
            # The cache holds every listed object at its listed version or a later one: it is
            # the newer of the two (a list served while events came in may be older than them,
            # and stamped at its end it would read as a flap back to the old state).
            cached = self._watch.reading()
            last = judge.observe(cached, cached.at)
            with self._cond:
                self.observations.append(last)

    def _cross_check(self, listed: Reading) -> bool:
        """Every object the list shows must be in the cache at that version or a later one."""
        _, missed = poll(
            lambda: _missed(listed, self._watch.versions(), self._watch.deleted()),
            deadline=CATCH_UP_S,
            done=lambda missed: not missed,
            interval=0.05,
        )
        if missed:
            self.disagreements.append(f"watch missed {', '.join(missed[:3])}")
            judge = self.judge
            if judge is not None:
                # Judged: the newer of the list and the cache per object, at the cache's time.
                # The list alone may be older than events that came in while it was read.
                both = newest(listed, self._watch.reading(), self._watch.deleted())
                with self._cond:
                    self.observations.append(judge.observe(both, both.at))
                    self.observations.sort(key=lambda o: o.at)
        return bool(missed)


def fresh_reading_due(
    observations: Sequence[Observation],
    started: float | None,
    injected: float | None,
    *,
    taken: bool,
) -> float | None:
    """When the observer must take a fresh reading (time.time()): once the watch may have
    caught up after the injection's end, if it has delivered no reading since the injection
    started. None: not injected yet, one taken already, or the watch has one."""
    if started is None or injected is None or taken:
        return None
    if any(o.at >= started for o in observations):
        return None
    return injected + CATCH_UP_S


def _missed(
    listed: Reading, cached: dict[str, dict[str, str]], deleted: dict[str, dict[str, str]]
) -> list[str]:
    """What the watch cache lacks compared with a full re-read (empty: it saw everything).

    A listed object must be in the cache at its listed version or a later one, or deleted
    later; a cached object missing from the list must be newer than the list."""
    found = []
    for kind_name, objects in listed.objects.items():
        have = cached.get(kind_name) or {}
        gone = deleted.get(kind_name) or {}
        for name, obj in objects.items():
            version = _version(obj)
            got = have.get(name)
            if got is not None and not _older(got, version):
                continue
            if got is None and name in gone and not _older(gone[name], version):
                continue
            found.append(f"{kind_name} {name}@{version}")
        # Cached, not listed, and not newer than the list: a deletion the watch never delivered.
        collection = listed.versions.get(kind_name, "")
        for name, version in have.items():
            if name not in objects and collection and not _older(collection, version):
                found.append(f"the deletion of {kind_name} {name}")
    return found


def newest(listed: Reading, cached: Reading, deleted: dict[str, dict[str, str]]) -> Reading:
    """Per object, the newer of a full list and the watch cache (by resourceVersion), at the
    cache's time: what the watch missed is taken from the list, nothing newer is lost."""
    objects: dict[str, dict[str, Obj]] = {}
    for kind_name in {*listed.objects, *cached.objects}:
        have = dict(cached.objects.get(kind_name) or {})
        gone = deleted.get(kind_name) or {}
        listed_objects = listed.objects.get(kind_name) or {}
        for name, obj in listed_objects.items():
            got = have.get(name)
            if got is not None:
                if _older(_version(got), _version(obj)):
                    have[name] = obj
            elif name not in gone or _older(gone[name], _version(obj)):
                have[name] = obj
        # Cached, not listed, and not newer than the list: a deletion the watch never delivered.
        collection = listed.versions.get(kind_name, "")
        for name in [n for n in have if n not in listed_objects]:
            if collection and not _older(collection, _version(have[name])):
                del have[name]
        objects[kind_name] = have
    return Reading(cached.at, objects, listed.versions)


def _version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion"))


def _older(cached: str, listed: str) -> bool:
    # resourceVersions are opaque strings; etcd's are integers, which allows an order.
    try:
        return int(cached) < int(listed)
    except ValueError:
        return cached != listed
