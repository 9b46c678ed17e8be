"""The fault cluster: a sibling embedded cluster for a run's cluster-wide faults.

A `scope: cluster` experiment restarts the API server, etcd or the controller manager: every
trial on that cluster would feel it, so on one cluster its trials run alone and the rest of
the run waits. On the embedded cluster a run can make a second one instead, like the first
(same binaries, same control-plane flags), named after it and the run: the cluster-wide
groups run there, one at a time, while every other trial goes on at `--parallel` on the run's
cluster. Each approach's shared parts (the operator, the Flux and Argo CD controllers) are
started for it through the app (`App.prepare`); their state is per cluster. Whatever happens,
`close` stops them and deletes the sibling.

Its trials' activities are pointed at it through their secrets (`point`): only experiments
whose activities are all Python calls can be (a process or HTTP activity reads the
environment, which is the run's cluster), and only those move (`movable`). chaosk8s builds
each client from the kubernetes client's process-wide default configuration (load, then
copy): two trials' activities building clients in the same instant, one here and one there,
could swap clusters, so during a run its factory builds one client at a time
(`compare.chaos.cluster.pointed_at`).

The same kind of sibling (`SiblingCluster`) also runs the trials of an app whose trials cannot
share a cluster (`compare.run.spread`): a trial cluster, made, owned and deleted alike.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compare import outputfile
from compare.approaches import Approach
from compare.chaos.cluster import listable
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.errors import CompareError, first_line
from compare.kube import poll
from compare.run.app import App
from compare.run.experiments import ExperimentSpec
from compare.run.owners import forget_fault_cluster, record_fault_cluster

# The secrets scope a moved trial's Python activities get (`point`).
SECRETS_SCOPE = "compare-fault-cluster"
# Creating it (kwokctl, ~5 s on 2 cores) and starting the approaches' parts on it.
READY_TIMEOUT_S = 300.0
# How long `close` waits for a creation still under way before deleting what there is.
CLOSE_JOIN_S = 120.0
# Made again when a component exited at its start (its port taken), at most this many times;
# how long a new cluster's components are watched for that.
MAKE_ATTEMPTS = 3
DEAD_AT_START_S = 1.0
_SECTIONS = ("method", "rollbacks")


def _activities(document: Mapping[str, Any]) -> list[Any]:
    hypothesis = document.get("steady-state-hypothesis") or {}
    found = list(hypothesis.get("probes") or [])
    for key in _SECTIONS:
        found += list(document.get(key) or [])
    return found


def movable(spec: ExperimentSpec) -> bool:
    """Whether the experiment's trials can run on the fault cluster: cluster-wide, and every
    activity a Python call (which takes its cluster from its secrets) or a reference to one."""
    return spec.cluster_wide and pointable(spec)


def pointable(spec: ExperimentSpec) -> bool:
    """Whether every activity of the experiment is a Python call (which takes its cluster from
    its secrets, `point`) or a reference to one: its trials can run on a sibling."""
    for activity in _activities(spec.document):
        if not isinstance(activity, Mapping):
            return False
        if "ref" in activity and "provider" not in activity:
            continue
        if (activity.get("provider") or {}).get("type") != "python":
            return False
    return True


def point(document: dict[str, Any], secrets: Mapping[str, str]) -> None:
    """Give every Python activity of the experiment `secrets` (in a scope of their own, read
    last, so they win over the experiment's own scopes)."""
    document.setdefault("secrets", {})[SECRETS_SCOPE] = dict(secrets)
    for activity in _activities(document):
        provider = activity.get("provider") if isinstance(activity, dict) else None
        if isinstance(provider, dict) and provider.get("type") == "python":
            provider["secrets"] = [*(provider.get("secrets") or []), SECRETS_SCOPE]


def splittable(app: App, specs: list[ExperimentSpec]) -> bool:
    """Whether a run of these experiments gains from a fault cluster: some movable ones and
    some others, and an app whose shared parts can be started per cluster."""
    moved = [s for s in specs if movable(s)]
    return app.per_cluster and bool(moved) and len(moved) < len(specs)


class SiblingCluster:
    """A sibling of the run's embedded cluster, named after it and `suffix` (see the module's
    docstring); `what` names it in the lines a failure is told in."""

    def __init__(self, main: ClusterTarget, suffix: str, what: str) -> None:
        self.source = EmbeddedCluster(cluster_key(main))
        self.cluster = self.source.sibling(suffix)
        self.what = what
        self.target = ClusterTarget(self.cluster.kubeconfig, None, embedded=True)
        self.ready = threading.Event()
        self.failed: str | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def listed(self) -> Path:
        """The copy of its kubeconfig the run lists for chaosk8s (`pointed_at`), without its
        current context (`listable`): written whole once the cluster is ready, so that no
        activity of the run's own trials ever reads the half-written file of a cluster being
        made (a missing file is skipped)."""
        return self.cluster.cluster_dir / "kubeconfig.run.yaml"

    def start(self, app: App, approaches: Mapping[str, Approach]) -> None:
        """Create it and start the approaches' parts on it, in the background."""

        def create() -> None:
            try:
                # Its owner first: a run killed while it exists leaves it to the next run.
                record_fault_cluster(self.name)
                self._make()
                text = listable(self.cluster.kubeconfig.read_text())
                outputfile.write_text(self.listed, text, mode=0o600)
                for approach in approaches.values():
                    app.prepare(approach, self.target)
                self.ready.set()
            except Exception as exc:  # reported as one line; the run falls back
                self.failed = exc.message if isinstance(exc, CompareError) else first_line(exc)
            finally:
                self._done.set()

        self._thread = threading.Thread(target=create, name=self.name, daemon=True)
        self._thread.start()

    def _make(self) -> None:
        """Create it with every component running. kwokctl picks each component's port before
        the component binds it: a cluster made at the same moment (another run's sibling) can
        take one, and that component exits ("address already in use") while the API server
        and kwok's nodes are ready, which is all `up` waits for - a controller manager that
        never runs leaves every trial there waiting for pods. Made again with fresh ports."""
        for attempt in range(1, MAKE_ATTEMPTS + 1):
            self.cluster.up_like(self.source)
            # A component that cannot bind its port exits at once: looked for a moment.
            dead = poll(self.cluster.dead_components, deadline=DEAD_AT_START_S, interval=0.1)[1]
            if not dead:
                return
            why = f"{dead[0]} exited at start: {self.cluster.log_tail(dead[0])}"
            self.cluster.down()
            if attempt == MAKE_ATTEMPTS:
                raise CompareError(f"{self.what} {self.name!r}: {why}")

    def settled(self) -> bool:
        """Whether its creation is over (ready, or failed)."""
        return self._done.is_set()

    def close(self) -> list[str]:
        """Stop what was started for it, delete it; what could not be, one line each."""
        if self._thread is not None:
            self._thread.join(CLOSE_JOIN_S)
        left: list[str] = []
        # Deferred: the deploy layer imports the approaches, which import the run's parts.
        from compare.approaches import forget_cluster

        try:
            forget_cluster(self.target)
        except Exception as exc:
            left.append(f"{self.what}'s processes: {first_line(exc)}")
        try:
            self.cluster.down()
        except CompareError as exc:
            left.append(f"{self.what} {self.name!r}: {exc.message}")
        else:
            forget_fault_cluster(self.name)
        return left


class FaultCluster(SiblingCluster):
    """The run's fault cluster: the sibling named after the run alone."""

    def __init__(self, main: ClusterTarget, run_id: str) -> None:
        super().__init__(main, run_id.lower(), "the fault cluster")
