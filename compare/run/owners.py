"""Which run owns a trial's namespace, whether that run's process still lives, and removing
what a killed run left behind.

Every trial namespace carries its run's id (the `RUN_LABEL` label) and its owner: the run's
process id, host and the process's start time (`OWNER_*` annotations). Everything a trial
creates lives in its namespace or is attached to it (its Helm release's record, a
HelmRelease, an Argo CD Application, a WebApp); a target chart's cluster-scoped objects are
the release's, removed by uninstalling it. A run killed with SIGKILL cannot clean up: the
next `compare run` (or `compare cleanup`) finds the namespaces whose owner is gone - no
process with that id on this host, or one started at another time (the id was reused) -
and removes them.

A run on the embedded cluster may make sibling clusters (`compare.run.sibling`: the fault
cluster, the trial clusters of an app whose trials cannot share one), processes of this
machine. Each one's owner is recorded in a file beside the clusters (`fault_cluster_record`);
the next run, and `compare cleanup`, delete the siblings of dead runs.

A namespace of another host's run cannot be judged from here: it is listed, never removed
unless named (`compare cleanup --run ID`). A namespace already being deleted (phase
Terminating) is going: it is neither listed nor touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from kubernetes import client

from compare import outputfile
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.deploy.charts import undeploy_helm
from compare.errors import CompareError, first_line
from compare.judge import REQUEST_TIMEOUT
from compare.kube import delete_namespace
from compare.kube.namespace import is_terminating
from compare.paths import cache_dir
from compare.run.leftovers import release_finalizers

RUN_LABEL = "compare.example.com/run-id"
OWNER_PID = "compare.example.com/run-pid"
OWNER_HOST = "compare.example.com/run-host"
OWNER_STARTED = "compare.example.com/run-process-start"
# On the namespaces of a run with `--keep`: kept on purpose, never a leftover.
KEPT = "compare.example.com/kept"
# Helm's record of a release: a Secret labelled so, one per revision.
HELM_RECORD = "owner=helm"
# Seconds a killed run's release gets to uninstall.
UNINSTALL_TIMEOUT_S = 60.0

DEAD, ALIVE, UNKNOWN = "dead", "alive", "unknown"


def process_start(pid: int) -> str | None:
    """When the process started (boot id and clock ticks since boot: unique on this host for
    the machine's lifetime); None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Field 22 (starttime), counted after the command name's closing parenthesis.
    fields = stat.rpartition(")")[2].split()
    return f"{_boot_id()}:{fields[19]}" if len(fields) > 19 else None


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def owner_annotations(keep: bool = False) -> dict[str, str]:
    """This process as the owner of what its run creates (`keep`: kept on purpose)."""
    pid = os.getpid()
    notes = {
        OWNER_PID: str(pid),
        OWNER_HOST: socket.gethostname(),
        OWNER_STARTED: process_start(pid) or "",
    }
    return {**notes, KEPT: "true"} if keep else notes


def owner_state(annotations: Mapping[str, str] | None) -> str:
    """DEAD when the owner was a process of this host that is gone (or whose id now names
    another process), ALIVE when it runs, UNKNOWN when it cannot be told (another host's, or
    no owner recorded)."""
    notes = annotations or {}
    pid, host, started = (notes.get(k) for k in (OWNER_PID, OWNER_HOST, OWNER_STARTED))
    if not pid or not pid.isdigit() or host != socket.gethostname():
        return UNKNOWN
    now = process_start(int(pid))
    if now is None:
        return DEAD
    return ALIVE if not started or now == started else DEAD


def preflight_labels() -> dict[str, str]:
    """The labels of a run's preflight namespace: made before the run has its id, it is
    owned under `preflight-<pid>`."""
    return {RUN_LABEL: f"preflight-{os.getpid()}"}


@dataclass
class Leftover:
    """A run's namespaces still there, and whether its process is gone."""

    run_id: str
    state: str
    owner: str
    namespaces: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"run {self.run_id} ({self.owner}): {', '.join(self.namespaces)}"


def find_runs(api: client.ApiClient) -> list[Leftover]:
    """The runs with trial namespaces on the cluster (not those being deleted, nor those kept
    with `--keep`), by run id; the calling process's own run is left out."""
    listed = client.CoreV1Api(api).list_namespace(
        label_selector=RUN_LABEL, _request_timeout=REQUEST_TIMEOUT
    )
    runs: dict[str, Leftover] = {}
    me = str(os.getpid())
    for item in listed.items:
        meta = item.metadata
        if is_terminating(item):
            continue
        notes = meta.annotations or {}
        if notes.get(KEPT) == "true":
            continue  # `--keep`: the user removes them
        if notes.get(OWNER_PID) == me and owner_state(notes) == ALIVE:
            continue
        run_id = (meta.labels or {}).get(RUN_LABEL, "")
        host, pid = notes.get(OWNER_HOST), notes.get(OWNER_PID)
        owner = f"pid {pid} on {host}" if pid and host else "no owner recorded"
        entry = runs.setdefault(run_id, Leftover(run_id, owner_state(notes), owner))
        entry.namespaces.append(meta.name)
    return sorted(runs.values(), key=lambda r: r.run_id)


def remove_namespace_of_run(cluster: ClusterTarget, api: client.ApiClient, namespace: str) -> None:
    """Remove a trial namespace without knowing its run's app: the finalizers no controller
    will remove, every Helm release recorded in it (a target chart's cluster-scoped objects
    go with it), then the namespace (controllers still running clear the finalizers of a
    HelmRelease, an Application, a WebApp as it goes)."""
    release_finalizers(api, namespace)
    records = client.CoreV1Api(api).list_namespaced_secret(
        namespace, label_selector=HELM_RECORD, _request_timeout=REQUEST_TIMEOUT
    )
    releases = sorted({(s.metadata.labels or {}).get("name", "") for s in records.items} - {""})
    for release in releases:
        undeploy_helm(cluster, namespace, release=release, timeout=UNINSTALL_TIMEOUT_S)
    delete_namespace(api, namespace)


def remove_runs(
    cluster: ClusterTarget,
    runs: Sequence[Leftover],
    remove: Callable[[ClusterTarget, client.ApiClient, str], None] = remove_namespace_of_run,
) -> tuple[list[str], list[str]]:
    """Remove every namespace of `runs`; (removed, failed: `namespace: why`)."""
    removed, failed = [], []
    api = cluster.api_client()
    try:
        for run in runs:
            for namespace in run.namespaces:
                try:
                    remove(cluster, api, namespace)
                except (CompareError, client.ApiException, OSError) as exc:
                    why = exc.message if isinstance(exc, CompareError) else first_line(exc)
                    failed.append(f"{namespace}: {why}")
                else:
                    removed.append(namespace)
    finally:
        api.close()
    return removed, failed


def fault_cluster_record(name: str) -> Path:
    """Where the owner of the fault cluster `name` is recorded."""
    return cache_dir() / "kwok" / "owners" / f"{name}.json"


def record_fault_cluster(name: str) -> None:
    path = fault_cluster_record(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    outputfile.write_text(path, json.dumps(owner_annotations()), mode=0o600)


def forget_fault_cluster(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        fault_cluster_record(name).unlink()


def remove_dead_fault_clusters() -> tuple[list[str], list[str]]:
    """Delete the sibling clusters (fault and trial clusters) whose run's process is gone,
    with the controllers started for them; (removed, failed: `name: why`)."""
    # Deferred: the approaches import the run's parts.
    from compare.approaches import forget_cluster

    removed, failed = [], []
    for path in sorted((cache_dir() / "kwok" / "owners").glob("*.json")):
        try:
            notes = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(notes, dict) or owner_state(notes) != DEAD:
            continue
        name = path.stem
        try:
            sibling = EmbeddedCluster(name)
            forget_cluster(ClusterTarget(sibling.kubeconfig, None, embedded=True))
            sibling.down()
        except Exception as exc:  # one line; the run goes on
            why = exc.message if isinstance(exc, CompareError) else first_line(exc)
            failed.append(f"sibling cluster {name}: {why}")
            continue
        forget_fault_cluster(name)
        removed.append(name)
    return removed, failed


def clean_dead_runs(cluster: ClusterTarget) -> list[str]:
    """At a run's start: remove what killed runs of this host left; one line each for what
    was removed, what could not be, and other hosts' runs (listed, never removed)."""
    lines = []
    api = cluster.api_client()
    try:
        runs = find_runs(api)
    except client.ApiException as exc:
        # A user who may not list namespaces runs all the same: it is said, once.
        runs = []
        lines.append(
            f"note: could not look for what killed runs left ({exc.status} {exc.reason}:"
            " listing namespaces)"
        )
    finally:
        api.close()
    dead = [r for r in runs if r.state == DEAD]
    clusters, broken = remove_dead_fault_clusters()
    if clusters:
        lines.append(f"removed the sibling clusters of killed runs: {', '.join(clusters)}")
    if broken:
        lines.append(
            f"could not remove {'; '.join(broken)}; `compare cluster down --name NAME` deletes one"
        )
    if dead:
        removed, failed = remove_runs(cluster, dead)
        if removed:
            gone = "; ".join(
                f"run {r.run_id}: {', '.join(n for n in r.namespaces if n in removed)}"
                for r in dead
                if set(r.namespaces) & set(removed)
            )
            lines.append(f"removed what killed runs left ({gone})")
        if failed:
            lines.append(
                f"could not remove what killed runs left ({'; '.join(failed)}); see"
                " `compare status -A`, then `compare cleanup`"
            )
    for run in runs:
        if run.state == UNKNOWN:
            lines.append(
                f"note: {run.describe()} - not this host's run, so left; once it is over,"
                f" `compare cleanup --run {run.run_id}` removes them"
            )
    return lines
