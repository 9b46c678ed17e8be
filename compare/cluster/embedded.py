"""The embedded cluster: a real control plane run by `kwokctl --runtime binary` on loopback.

etcd, kube-apiserver (RBAC + admission), kube-controller-manager, kube-scheduler and the kwok
controller run as local processes built from Go modules; kwok nodes accept pods and mark them
Running/Ready without containers. A sixth component, the toolkit's LoadBalancer address
controller (`compare.cluster.loadbalancer`, Python), is a kwokctl component like them: started,
stopped and restarted by kwokctl from the cluster's kwok.yaml. kwokctl keeps its state under
<cache>/kwok, never in ~/.kube.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from compare.cluster.binaries import ensure_binaries, tool_path
from compare.cluster.ports import free_port
from compare.errors import CompareError
from compare.kube import poll, wait_until_gone
from compare.paths import bin_dir, cache_dir

DEFAULT_NAME = "compare"
DEFAULT_NODES = 2
MAX_NODES = 100
# Sized for thousands of WebApps: kube-apiserver's own default range is a /24 (about 250
# Services) and kwok's node template holds 110 pods.
SERVICE_CIDR = "10.96.0.0/16"
NODE_MAX_PODS = 4000
# Node i gets the i-th /20 (4094 pod IPs, more than NODE_MAX_PODS), clear of the Services.
NODE_POD_CIDRS = ("10.244.0.0/20", "fd00::/64")
KWOKCTL_CONFIG = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  bindAddress: 127.0.0.1
"""


@dataclass(frozen=True)
class ControlPlaneArg:
    """One flag `compare cluster up` gives a control-plane component, and why; a `flag` of
    the form `env:NAME` is the environment variable NAME of the component's process."""

    component: str
    flag: str
    value: str
    reason: str = ""

    @property
    def env(self) -> str | None:
        """The environment variable's name, None for a command-line flag."""
        return self.flag.removeprefix(ENV_PREFIX) if self.flag.startswith(ENV_PREFIX) else None


ENV_PREFIX = "env:"


# Tuning profiles: "throughput" (the default) or "kwokctl" (kwokctl's and Kubernetes' own
# defaults). Chosen with COMPARE_CLUSTER_TUNING or `compare cluster up --tuning`; single flags
# are overridden with COMPARE_CLUSTER_ARGS / `--arg COMPONENT:FLAG=VALUE`. Applied when the
# cluster is created (kwokctl keeps them in the cluster's kwok.yaml, restarts reuse them).
TUNING_ENV = "COMPARE_CLUSTER_TUNING"
ARGS_ENV = "COMPARE_CLUSTER_ARGS"
DEFAULT_TUNING = "throughput"
_KCM, _SCHED = "kube-controller-manager", "kube-scheduler"
THROUGHPUT_ARGS: tuple[ControlPlaneArg, ...] = (
    # Every controller of kcm has a client of its own with this token bucket (kcm's default:
    # 20/s, burst 30). kcm sends ~9 requests per one-replica Deployment (ReplicaSet, pod,
    # status updates, events); with 1,000 of them it waited 2,230 s in its rate limiters and
    # the deployment queue held items 75 s: the binding limit, ~4 pods/s. 300/s is more than
    # 2 cores serve, so CPU sets the pace (bench/cluster_throughput.py; README).
    ControlPlaneArg(_KCM, "kube-api-qps", "300", "kcm's 20/s client limit bound pod creation"),
    ControlPlaneArg(_KCM, "kube-api-burst", "600", "absorbs a run's apply burst"),
    # Workers per controller (default 5): without the client limit a worker waits on the API
    # server's round trip. 50 was slower than 20 (more conflicting updates).
    ControlPlaneArg(_KCM, "concurrent-deployment-syncs", "20", "5 workers queue Deployments"),
    ControlPlaneArg(_KCM, "concurrent-replicaset-syncs", "20", "5 workers queue ReplicaSets"),
    # kube-scheduler: a binding and an event per pod, at 50/s (burst 100) by default.
    ControlPlaneArg(_SCHED, "kube-api-qps", "300", "the scheduler's 50/s limit: 25 pods/s"),
    ControlPlaneArg(_SCHED, "kube-api-burst", "600", "absorbs a burst of new pods"),
    # Go's collector runs when the heap has grown by GOGC % (default 100) since the last one.
    # With the limits above lifted the control plane is bound by CPU, kube-apiserver using
    # ~60 % of it, and a share of that is garbage collection of short-lived request objects:
    # at 200 the components used 3-25 % less CPU for 1,000 Deployments (control plane median
    # 25.8 against 30.2 CPU-s, 3 back-to-back pairs), for a larger heap (README).
    *(
        ControlPlaneArg(component, "env:GOGC", "200", "less CPU spent collecting garbage")
        for component in ("etcd", "kube-apiserver", _KCM, _SCHED, "kwok-controller")
    ),
    # Not set, on measurement: kube-apiserver's inflight limits and APF (nothing queued or
    # rejected under the burst; APF keeps protecting the server), kwok (no client limit, no
    # stage delays in kwokctl's default stages).
)
TUNINGS: dict[str, tuple[ControlPlaneArg, ...]] = {
    "throughput": THROUGHPUT_ARGS,
    "kwokctl": (),
}


# The LoadBalancer address controller (`compare.cluster.loadbalancer`): every Service of type
# LoadBalancer gets status.loadBalancer.ingress[].ip from LB_RANGE, a loopback range nothing
# else of the toolkit uses (it binds 127.0.0.1 only). Nothing listens there: kwok's pods run
# no containers; the address is what readers of the API (Argo CD's health, a chart's wait) need.
LB_COMPONENT = "lb-address-controller"
LB_RANGE = "127.240.0.0/16"
# The directory that holds the `compare` package: the controller runs this toolkit's code.
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# The components kwokctl runs for the cluster (each one's pid file is pids/<component>.pid).
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
    LB_COMPONENT,
)
STOP_TIMEOUT_S = 10.0
# A new cluster's API server is ready ~1-2 s after kwokctl started it (2 cores); the deadline is
# kwokctl's own default wait.
READY_TIMEOUT_S = 120.0
READY_POLL_S = 0.05
# kwok marks its nodes Ready within tens of ms of their creation; a node that is not Ready
# after this has no kwok behind it.
NODES_READY_TIMEOUT_S = 30.0
# Creations tried when a component exits at start (a port taken by another cluster meanwhile).
CREATE_ATTEMPTS = 2
# The KwokctlConfiguration options of the loopback ports the components listen on. Left to
# kwokctl, each is the highest free port below 32768 that no other kwokctl cluster's
# configuration names - the same port for two clusters created at the same moment (their
# configurations are not written yet), so the later etcd died ("address already in use") and
# the cluster failed minutes later. The toolkit picks them instead (`compare.cluster.ports`:
# reserved across its processes) and gives them to kwokctl.
PORT_OPTIONS = (
    "etcdPeerPort",
    "etcdPort",
    "kubeApiserverPort",
    "kwokControllerPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
)
# How often a running `kwokctl create cluster` is looked at for a component that lost its port.
CREATE_WATCH_S = 0.25
# How long a killed kwokctl is given to hand back its output.
KILLED_WAIT_S = 10.0
BIND_FAILURE = "address already in use"
# Ports of stopped components this process holds until it starts them again (per cluster).
_HELD_PORTS: dict[str, list[socket.socket]] = {}
_HELD_LOCK = threading.Lock()


@dataclass(frozen=True)
class ComponentRestart:
    """One component stopped and started again: the pids and when (time.time())."""

    component: str
    signal: str
    old_pid: int
    new_pid: int
    stopped_at: float
    ready_at: float

    @property
    def seconds(self) -> float:
        return self.ready_at - self.stopped_at


def _check_component(component: str) -> None:
    if component not in COMPONENTS:
        raise CompareError(
            f"unknown control-plane component {component!r} (known: {', '.join(COMPONENTS)})"
        )


def default_name() -> str:
    return os.environ.get("COMPARE_CLUSTER_NAME", DEFAULT_NAME)


_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def check_cluster_name(name: str) -> str:
    """A cluster name is a directory under the cache: a DNS label, never `..` or a `/`."""
    if not _CLUSTER_NAME.match(name):
        raise CompareError(
            f"cluster name {name!r}: must be lower-case letters, digits and '-' (at most 40)"
        )
    return name


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    exists: bool
    running: bool
    kubeconfig: Path
    workdir: Path
    processes: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.exists:
            return f"embedded cluster {self.name!r}: not created"
        state = "running" if self.running else "stopped (stale)"
        procs = ", ".join(self.processes) or "none"
        return (
            f"embedded cluster {self.name!r}: {state}\n"
            f"  kubeconfig: {self.kubeconfig}\n"
            f"  processes:  {procs}"
        )


class EmbeddedCluster:
    """One named kwokctl cluster whose state lives in the toolkit's cache directory."""

    def __init__(self, name: str | None = None) -> None:
        self.name = check_cluster_name(default_name() if name is None else name)
        self.workdir = cache_dir() / "kwok"
        self.cluster_dir = self.workdir / "clusters" / self.name
        self.kubeconfig = self.cluster_dir / "kubeconfig.yaml"

    # -- queries ---------------------------------------------------------------------------

    def status(self) -> ClusterStatus:
        exists = self.cluster_dir.is_dir()
        procs = self._live_processes() if exists else ()
        running = exists and self.kubeconfig.exists() and self._api_ready()
        return ClusterStatus(self.name, exists, running, self.kubeconfig, self.workdir, procs)

    def _live_processes(self) -> tuple[str, ...]:
        """Component names whose pid file points at a live process."""
        alive = []
        for pid_file in sorted((self.cluster_dir / "pids").glob("*.pid")):
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                continue
            if _alive(pid):
                alive.append(f"{pid_file.stem}[{pid}]")
        return tuple(alive)

    def _wait_ready(self, *, timeout: float) -> bool:
        """kwokctl start returns once the processes are launched, not when they serve. A probe
        is one HTTPS request (a few ms), so it looks often: kwokctl's own wait looks once a
        second and spent ~0.5 s of every `cluster up` past the moment the server was ready."""
        return poll(self._api_ready, deadline=timeout, interval=READY_POLL_S)[0]

    def _wait_nodes_ready(self, count: int, *, timeout: float) -> bool:
        """Whether `count` kwok nodes are Ready within `timeout` (kwok marks them: a dead kwok
        never does). Without a direct probe (no certificate files), the components are asked
        instead: all of them running."""
        try:
            return poll(
                lambda: _nodes_ready(self.kubeconfig) >= count,
                deadline=timeout,
                interval=READY_POLL_S,
            )[0]
        except _NoDirectProbe:
            return not self.dead_components()

    def _api_ready(self) -> bool:
        """GET /readyz answers `ok`: asked directly with the kubeconfig's certificates (no
        kubectl process: ~0.1 s of CPU each), through kubectl when they are not files."""
        try:
            return _readyz(self.kubeconfig)
        except _NoDirectProbe:
            result = self._kubectl("get", "--raw", "/readyz", timeout=10, check=False)
            return result.returncode == 0 and result.stdout.strip() == "ok"

    # -- lifecycle ---------------------------------------------------------------------------

    def up(
        self,
        *,
        nodes: int | None = None,
        port: int | None = None,
        audit_policy: str | None = None,
        tuning: str | None = None,
        extra_args: list[ControlPlaneArg] | None = None,
    ) -> ClusterStatus:
        """Start the cluster, or report the running one (idempotent).

        `nodes` (default 2) is the number of kwok nodes; given for a running cluster, its nodes
        are scaled to it. `audit_policy` (an audit.k8s.io Policy, YAML) turns on the API
        server's audit log (`audit_log`) for a cluster created here. `tuning` and `extra_args` pick
        the control plane's flags for a cluster created here (see `control_plane_args`).
        """
        check_nodes(nodes)
        flags = control_plane_args(tuning, extra_args)
        ensure_binaries()
        current = self.status()
        if current.running:
            if nodes is not None:
                self.scale_nodes(nodes)
            # A cluster made before the address controller existed gets it; one whose
            # controller is not running has it started again (kwokctl starts only those).
            if self._ensure_lb_component() or self.component_pid(LB_COMPONENT) is None:
                self.start_components()
                current = self.status()
            self.tighten_secrets()
            return current
        if current.exists:
            # A stopped cluster (e.g. after a reboot) is restarted; a broken one is reported.
            self._ensure_lb_component()
            result = self._kwokctl("start", "cluster", timeout=180, check=False)
            if result.returncode != 0 or not self._wait_ready(timeout=60):
                raise CompareError(
                    f"stale embedded cluster directory {self.cluster_dir} could not be restarted "
                    f"({_last_line(result.stderr)}); "
                    f"run `compare cluster down{self.name_flag()}` and retry"
                )
            self.tighten_secrets()
            return self.status()
        if port is not None:
            _check_port_free(port)
        args = [
            "create", "cluster",
            "--runtime", "binary",
            "--kube-authorization=true",
            "--kube-admission=true",
            # kwokctl would otherwise merge the cluster into ~/.kube/config.
            "--kubeconfig", "",
            # kwokctl's readiness wait looks once a second; ours (below) looks every 50 ms.
            "--wait", "0s",
            "--timeout", "5m",
        ]  # fmt: skip
        if port is not None:
            args += ["--kube-apiserver-port", str(port)]
        want = DEFAULT_NODES if nodes is None else nodes
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            config = self._create_config(flags, self._pick_ports(given=port))
            self._write_lb_program()
            try:
                result = self._kwokctl(
                    *args, *self._capacity_args(audit_policy), timeout=360, check=False,
                    config=config, stop_when=self.lost_port,
                )  # fmt: skip
            finally:
                # kwokctl copied the policy and the configuration into the cluster's directory.
                self._audit_policy_file().unlink(missing_ok=True)
                config.unlink(missing_ok=True)
            lost = self.lost_port()
            if lost is not None:
                # A port taken by another process between our pick and the bind: seen within
                # a fraction of a second of the component's exit, not at kwokctl's timeout.
                self.down()
                if attempt == CREATE_ATTEMPTS:
                    raise CompareError(f"could not start the embedded cluster: {lost}")
                continue
            if result.returncode != 0:
                if not (self.cluster_dir / "kwok.yaml").exists():
                    # Nothing of a cluster but the controller's program written above.
                    shutil.rmtree(self.cluster_dir, ignore_errors=True)
                raise CompareError(
                    f"could not start the embedded cluster: {_last_line(result.stderr)} "
                    f"(logs in {self.cluster_dir / 'logs'})"
                )
            # kwokctl returned once the API server answered /version; ready is /readyz `ok`.
            if not self._wait_ready(timeout=READY_TIMEOUT_S):
                raise CompareError(
                    f"the embedded cluster's API server was not ready {READY_TIMEOUT_S:.0f}s"
                    f" after it started (logs in {self.cluster_dir / 'logs'})"
                )
            self.scale_nodes(want)
            # kwokctl picks free ports before the components bind them: another cluster
            # starting at the same moment can take one in between, and that component exits
            # ("address already in use") while kwokctl reports success - kwok's nodes would
            # never be Ready. Start over once with fresh ports; then say which one and why.
            if self._wait_nodes_ready(want, timeout=NODES_READY_TIMEOUT_S):
                break
            dead = self.dead_components()
            why = (
                f"{dead[0]} exited at start: {self.log_tail(dead[0])}"
                if dead
                else f"its kwok nodes were not Ready {NODES_READY_TIMEOUT_S:.0f}s after"
                f" their creation (kwok-controller: {self.log_tail('kwok-controller')})"
            )
            self.down()
            if attempt == CREATE_ATTEMPTS:
                raise CompareError(f"could not start the embedded cluster: {why}")
        self.tighten_secrets()
        # Ready, and the nodes were just created through its API server: running, without
        # another probe.
        return ClusterStatus(
            self.name, True, True, self.kubeconfig, self.workdir, self._live_processes()
        )

    def tighten_secrets(self) -> None:
        """kwokctl writes the cluster's private keys (pki/*.key: the CA's, the admin's, which
        also signs ServiceAccount tokens) and the admin kubeconfig world-readable (0644);
        they are the cluster's root of trust, so only their owner may read them."""
        secrets = [*self.cluster_dir.glob("pki/*.key"), self.kubeconfig]
        for path in secrets:
            try:
                if path.is_file() and path.stat().st_mode & 0o077:
                    path.chmod(0o600)
            except OSError:
                continue

    def down(self) -> bool:
        """Delete the cluster and its processes; False when there was none."""
        if not self.cluster_dir.exists():
            return False
        ensure_binaries()
        pids = self._pids()
        result = self._kwokctl("delete", "cluster", timeout=120, check=False)
        if result.returncode != 0:
            raise CompareError(
                f"could not delete the embedded cluster: {_last_line(result.stderr)}"
            )
        if self.cluster_dir.exists() and not self._live_processes():
            # A stale directory kwokctl cannot parse: nothing runs, so removing it is safe.
            shutil.rmtree(self.cluster_dir)
        # kwokctl signals the components and returns; wait so that "down" means gone.
        wait_until_gone(
            lambda: [str(pid) for pid in pids if _alive(pid)],
            deadline=30,
            timed_out=lambda left: CompareError(
                f"embedded cluster processes still running after down: {', '.join(left)}"
            ),
        )
        return True

    # -- capacity -------------------------------------------------------------------------

    @property
    def audit_log(self) -> Path:
        """The API server's audit log (written only when created with an audit policy)."""
        return self.cluster_dir / "logs" / "audit.log"

    def _capacity_args(self, audit_policy: str | None) -> list[str]:
        """`kwokctl create cluster` flags: the Service range, the optional audit policy."""
        args = ["--extra-args", f"kube-apiserver=service-cluster-ip-range={SERVICE_CIDR}"]
        if audit_policy is not None:
            path = self._audit_policy_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(audit_policy)
            args += ["--kube-audit-policy", str(path)]
        return args

    def _audit_policy_file(self) -> Path:
        return self.workdir / "audit" / f"{self.name}.yaml"

    def _create_config(self, flags: tuple[ControlPlaneArg, ...], ports: dict[str, int]) -> Path:
        """This cluster's creation configuration (the tuned flags, the components' ports),
        apart from other clusters'."""
        path = self.workdir / "create" / f"{self.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kwokctl_config(flags, (self._lb_component(),), ports))
        return path

    def _pick_ports(self, *, given: int | None) -> dict[str, int]:
        """A free port for each of `PORT_OPTIONS` (the API server's is `given` when the user
        chose it), none that another cluster's configuration names (a stopped cluster's
        components take theirs again when it is started)."""
        taken: set[int] = set()
        for kwok in (self.workdir / "clusters").glob("*/kwok.yaml"):
            if kwok.parent != self.cluster_dir:
                taken |= set(_configured_ports(kwok))
        return {
            option: free_port(avoid=taken)
            for option in PORT_OPTIONS
            if not (option == "kubeApiserverPort" and given is not None)
        }

    def lost_port(self) -> str | None:
        """A component of this cluster that exited because its port was taken (its name and
        its log's line saying so); None when none did."""
        for component in COMPONENTS:
            pid_file = self.cluster_dir / "pids" / f"{component}.pid"
            if not pid_file.exists() or self.component_pid(component) is not None:
                continue  # not started yet, or running
            try:
                log = (self.cluster_dir / "logs" / f"{component}.log").read_text(errors="replace")
            except OSError:
                continue
            lines = [line for line in log.splitlines() if BIND_FAILURE in line]
            if lines:
                return f"{component} exited at start: {lines[-1].strip()}"
        return None

    # -- the LoadBalancer address controller ------------------------------------------------

    def _lb_component(self) -> dict[str, Any]:
        """The controller as a kwokctl component: its program in the cluster's bin/ (as
        kwokctl links the others there), started after the API server, logging to
        logs/<component>.log and recorded in pids/<component>.pid by kwokctl."""
        return {
            "name": LB_COMPONENT,
            "links": ["kube-apiserver"],
            "binary": str(self.cluster_dir / "bin" / LB_COMPONENT),
            "args": ["--kubeconfig", str(self.kubeconfig), "--range", LB_RANGE],
            "workDir": str(self.cluster_dir),
        }

    def _write_lb_program(self) -> None:
        """The controller's program: this interpreter running this toolkit's module (rewritten
        at each `up`: the cluster runs the code of the toolkit that last brought it up)."""
        path = self.cluster_dir / "bin" / LB_COMPONENT
        program = (
            f"#!{sys.executable or 'python3'}\n"
            f'"""{LB_COMPONENT} of the embedded cluster {self.name!r} (compare cluster up)."""\n'
            "import sys\n"
            f"sys.path.insert(0, {str(_PACKAGE_ROOT)!r})\n"
            "from compare.cluster.loadbalancer import main\n"
            "sys.exit(main())\n"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != program:
            path.write_text(program)
        path.chmod(0o750)

    def _ensure_lb_component(self) -> bool:
        """Add the controller to a cluster made without it (its kwok.yaml), write its program;
        True when the component was added."""
        path = self.cluster_dir / "kwok.yaml"
        try:
            text = path.read_text()
            if f"name: {LB_COMPONENT}\n" in text:  # has it (parsing costs ~0.1 s each `up`)
                self._write_lb_program()
                return False
            documents = list(yaml.safe_load_all(text))
        except (OSError, yaml.YAMLError):
            return False  # no cluster kwokctl can read: `up` reports it
        self._write_lb_program()
        for doc in documents:
            if isinstance(doc, dict) and doc.get("kind") == "KwokctlConfiguration":
                components = doc.setdefault("components", [])
                if any(c.get("name") == LB_COMPONENT for c in components if isinstance(c, dict)):
                    return False
                components.append(self._lb_component())
                path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
                return True
        return False

    def configured_args(self) -> list[ControlPlaneArg]:
        """The flags and environment this cluster's components were created with (its
        kwok.yaml's component patches), but the Service range `up` always gives: the same
        control-plane configuration for a cluster made like this one (`sibling`)."""
        args = []
        for doc in self._kwokctl_documents():
            for patch in doc.get("componentsPatches") or []:
                component = str(patch.get("name", ""))
                if component not in COMPONENTS:
                    continue
                for item in patch.get("extraArgs") or []:
                    if item.get("key") != "service-cluster-ip-range":
                        args.append(
                            ControlPlaneArg(component, str(item["key"]), str(item["value"]))
                        )
                for item in patch.get("extraEnvs") or []:
                    flag = f"{ENV_PREFIX}{item['name']}"
                    args.append(ControlPlaneArg(component, flag, str(item.get("value", ""))))
        return args

    def sibling(self, suffix: str) -> EmbeddedCluster:
        """Another cluster named after this one and `suffix` (not created: `up_like`)."""
        room = 40 - len(suffix) - 1
        return EmbeddedCluster(f"{self.name[:room].rstrip('-')}-{suffix}")

    def up_like(self, source: EmbeddedCluster) -> ClusterStatus:
        """Create this cluster with `source`'s binaries (the toolkit's own, as every cluster)
        and control-plane configuration (its flags replayed over kwokctl's defaults); nothing
        is left half-created on failure (the error is raised again)."""
        try:
            return self.up(tuning="kwokctl", extra_args=source.configured_args())
        except BaseException:
            with contextlib.suppress(CompareError):
                self.down()
            raise

    def scale_nodes(self, nodes: int) -> None:
        """Exactly `nodes` kwok nodes, each holding NODE_MAX_PODS pods (kept: existing ones)."""
        check_nodes(nodes)
        cidrs = ", ".join(json.dumps(cidr) for cidr in NODE_POD_CIDRS)
        self._kwokctl(
            "scale", "node",
            "--replicas", str(nodes),
            "--param", f".allocatable.pods = {NODE_MAX_PODS}",
            "--param", f".podCIDRs = [{cidrs}]",
            timeout=120,
        )  # fmt: skip

    # -- control-plane components (for the control-plane fault experiments) ------------------

    def component_pid(self, component: str) -> int | None:
        """The live pid of one component of this cluster (None: not running).

        A pid counts only while its command line is this cluster's copy of the binary
        (<cluster>/bin/<component>): a pid reused by another process, or by another
        cluster's component, is never this component."""
        _check_component(component)
        try:
            pid = int((self.cluster_dir / "pids" / f"{component}.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        if not _alive(pid):
            return None
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
            # argv[0] of a binary; argv[1] of a program its interpreter runs (the controller).
            ran = [Path(arg.decode()) for arg in argv]
        except (OSError, UnicodeDecodeError):
            return None
        return pid if self.cluster_dir / "bin" / component in ran else None

    def dead_components(self) -> list[str]:
        """The components of this cluster that do not run (in start order)."""
        return [c for c in COMPONENTS if self.component_pid(c) is None]

    def log_tail(self, component: str) -> str:
        """The last line of a component's log (its error when it exited)."""
        try:
            text = (self.cluster_dir / "logs" / f"{component}.log").read_text(errors="replace")
        except OSError:
            return "no log"
        return _last_line(text) or "empty log"

    def component_ports(self, component: str) -> tuple[int, ...]:
        """The loopback ports kwokctl gave the component (from the cluster's kwok.yaml)."""
        _check_component(component)
        for item in self._kwokctl_components():
            if item.get("name") == component:
                return tuple(int(p["port"]) for p in item.get("ports") or [] if "port" in p)
        return ()

    def _kwokctl_components(self) -> list[dict[str, Any]]:
        for doc in self._kwokctl_documents():
            return [c for c in doc.get("components") or [] if isinstance(c, dict)]
        return []

    def _kwokctl_documents(self) -> list[dict[str, Any]]:
        """The KwokctlConfiguration documents of the cluster's kwok.yaml."""
        try:
            documents = list(yaml.safe_load_all((self.cluster_dir / "kwok.yaml").read_text()))
        except (OSError, yaml.YAMLError):
            return []
        return [
            d for d in documents if isinstance(d, dict) and d.get("kind") == "KwokctlConfiguration"
        ]

    def stop_component(self, component: str, *, kill: bool = False) -> int:
        """Stop one component: SIGKILL, or SIGTERM (SIGKILL after STOP_TIMEOUT_S); return its
        old pid once it is gone.

        While it is down this process holds its loopback ports (a listening socket on each),
        so that another kwokctl cluster created meanwhile - kwokctl hands out the highest free
        port - cannot take them; `start_components` gives them back to it. The pid file goes
        too: a killed process may linger as a zombie, which kwokctl would take for running."""
        pid = self.component_pid(component)
        if pid is None:
            raise CompareError(f"{component} of the embedded cluster {self.name!r} is not running")
        sig = signal.SIGKILL if kill else signal.SIGTERM
        os.kill(pid, sig)
        stopped, _ = poll(lambda: not _alive(pid), deadline=STOP_TIMEOUT_S, interval=0.005)
        if not stopped and sig == signal.SIGTERM:
            os.kill(pid, signal.SIGKILL)  # a graceful stop that overran: finish it
            stopped, _ = poll(lambda: not _alive(pid), deadline=STOP_TIMEOUT_S, interval=0.005)
        if not stopped:
            raise CompareError(
                f"{component} (pid {pid}) of the embedded cluster {self.name!r} is"
                f" still running {STOP_TIMEOUT_S:.0f}s after SIGKILL"
            )
        self._hold_ports(component)
        (self.cluster_dir / "pids" / f"{component}.pid").unlink(missing_ok=True)
        return pid

    def start_components(self, *, timeout: float = 120.0) -> dict[str, int | None]:
        """Start every component that is not running (kwokctl's own `start cluster`, which
        leaves running ones alone), wait until the API server is ready, return the pids
        (None: that component is down again - a leader that lost its Lease exits)."""
        self._release_ports()
        result = self._kwokctl("start", "cluster", timeout=timeout, check=False)
        if result.returncode != 0 or not self._wait_ready(timeout=timeout):
            raise CompareError(
                f"could not start the components of the embedded cluster {self.name!r}:"
                f" {_last_line(result.stderr)} (logs in {self.cluster_dir / 'logs'})"
            )
        return {name: self.component_pid(name) for name in COMPONENTS}

    def restart_component(self, component: str, *, kill: bool = True) -> ComponentRestart:
        """Stop one component (SIGKILL by default) and start it again with kwokctl at once;
        return once the API server is ready again, with the old and the new pid."""
        stopped = time.time()
        old = self.stop_component(component, kill=kill)
        new = self.start_components()[component]
        if new is None:
            raise CompareError(
                f"{component} of the embedded cluster {self.name!r} did not stay up after its"
                f" restart (log: {self.cluster_dir / 'logs' / f'{component}.log'})"
            )
        return ComponentRestart(
            component=component,
            signal="SIGKILL" if kill else "SIGTERM",
            old_pid=old,
            new_pid=new,
            stopped_at=stopped,
            ready_at=time.time(),
        )

    def _hold_ports(self, component: str) -> None:
        held = []
        for port in self.component_ports(component):
            # The stopped process may release its sockets a moment after it is gone (its
            # threads exit last): until a bind works, a new process would fail to listen.
            _, sock = poll(partial(_bound, port), deadline=STOP_TIMEOUT_S, interval=0.01)
            if sock is not None:
                held.append(sock)  # else taken by someone else: the start will say so
        with _HELD_LOCK:
            _HELD_PORTS.setdefault(str(self.cluster_dir), []).extend(held)

    def _release_ports(self) -> None:
        with _HELD_LOCK:
            held = _HELD_PORTS.pop(str(self.cluster_dir), [])
        for sock in held:
            sock.close()

    def _pids(self) -> list[int]:
        pids = []
        for pid_file in (self.cluster_dir / "pids").glob("*.pid"):
            try:
                pids.append(int(pid_file.read_text().strip()))
            except (OSError, ValueError):
                continue
        return pids

    # -- helpers ---------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                # kwokctl runs `kubectl` from PATH in places (e.g. `start cluster`): ours first,
                # never another one the machine may have (a cloud SDK shim, a different version).
                "PATH": os.pathsep.join([str(bin_dir()), env.get("PATH", "")]),
                "KWOK_WORKDIR": str(self.workdir),
                "KWOK_KUBE_VERSION": _kube_version(),
                "KWOK_ETCD_BINARY": tool_path("etcd"),
                "KWOK_KUBE_APISERVER_BINARY": tool_path("kube-apiserver"),
                "KWOK_KUBE_CONTROLLER_MANAGER_BINARY": tool_path("kube-controller-manager"),
                "KWOK_KUBE_SCHEDULER_BINARY": tool_path("kube-scheduler"),
                "KWOK_KUBECTL_BINARY": tool_path("kubectl"),
                "KWOK_CONTROLLER_BINARY": tool_path("kwok"),
            }
        )
        return env

    def name_flag(self) -> str:
        """` --name X` for commands a user is told to run, unless X is the default."""
        return "" if self.name == DEFAULT_NAME else f" --name {self.name}"

    def _config(self) -> Path:
        """kwokctl configuration: every component listens on loopback only."""
        path = self.workdir / "kwokctl.yaml"
        if not path.exists() or path.read_text() != KWOKCTL_CONFIG:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(KWOKCTL_CONFIG)
        return path

    def _kwokctl(
        self,
        *args: str,
        timeout: float,
        check: bool = True,
        config: Path | None = None,
        stop_when: Callable[[], object] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """kwokctl with these arguments; `stop_when`, looked at while it runs, ends it early
        when it returns something true (kwokctl would wait for what can no longer come)."""
        config = config or self._config()
        cmd = [tool_path("kwokctl"), "--name", self.name, "--config", str(config), *args]
        started = time.monotonic()
        with subprocess.Popen(
            cmd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            while True:
                left = timeout - (time.monotonic() - started)
                try:
                    out, err = proc.communicate(timeout=max(0.0, min(CREATE_WATCH_S, left)))
                    break
                except subprocess.TimeoutExpired:
                    stop = stop_when is not None and stop_when()
                    if stop or left <= 0:
                        proc.kill()
                        # Killed: its pipes close with it (the components log to files).
                        out, err = proc.communicate(timeout=KILLED_WAIT_S)
                        if stop:
                            break
                        raise CompareError(
                            f"kwokctl {' '.join(args[:2])} timed out after {timeout:.0f}s"
                        ) from None
        result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        if check and result.returncode != 0:
            raise CompareError(f"kwokctl {' '.join(args[:2])} failed: {_last_line(result.stderr)}")
        return result

    def _kubectl(
        self, *args: str, timeout: float, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [tool_path("kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as exc:
            if check:
                raise CompareError(f"kubectl {' '.join(args)} failed: {exc}") from exc
            return subprocess.CompletedProcess(cmd, 1, "", str(exc))


def default_tuning() -> str:
    return os.environ.get(TUNING_ENV, "").strip() or DEFAULT_TUNING


def parse_control_plane_args(items: list[str] | str, *, source: str) -> list[ControlPlaneArg]:
    """`COMPONENT:FLAG=VALUE` items (a string: separated by spaces or commas) as arguments;
    a malformed one is a one-line error naming `source` (the option or variable)."""
    if isinstance(items, str):
        items = items.replace(",", " ").split()
    parsed = []
    for item in items:
        component, _, rest = item.partition(":")
        flag, eq, value = rest.partition("=")
        flag = flag.strip().lstrip("-")
        if not eq or flag in ("", ENV_PREFIX) or component not in COMPONENTS:
            raise CompareError(
                f"{source}: {item!r} is not COMPONENT:FLAG=VALUE (or COMPONENT:env:NAME=VALUE)"
                f" with COMPONENT one of {', '.join(COMPONENTS)}"
                " (e.g. kube-controller-manager:kube-api-qps=300)"
            )
        parsed.append(ControlPlaneArg(component, flag, value.strip(), f"set by {source}"))
    return parsed


def control_plane_args(
    tuning: str | None = None, overrides: list[ControlPlaneArg] | None = None
) -> tuple[ControlPlaneArg, ...]:
    """The profile's flags (default: COMPARE_CLUSTER_TUNING, else throughput), then the
    overrides (default: COMPARE_CLUSTER_ARGS), each replacing the profile's value of its flag."""
    tuning = tuning or default_tuning()
    if tuning not in TUNINGS:
        raise CompareError(
            f"unknown cluster tuning {tuning!r} (known: {', '.join(TUNINGS)}; {TUNING_ENV})"
        )
    if overrides is None:
        overrides = parse_control_plane_args(os.environ.get(ARGS_ENV, ""), source=ARGS_ENV)
    chosen = {(a.component, a.flag): a for a in TUNINGS[tuning]}
    for arg in overrides:
        chosen.pop((arg.component, arg.flag), None)  # the override goes last, in given order
        chosen[(arg.component, arg.flag)] = arg
    return tuple(chosen.values())


def kwokctl_config(
    args: tuple[ControlPlaneArg, ...] = (),
    components: tuple[dict[str, Any], ...] = (),
    ports: Mapping[str, int] | None = None,
) -> str:
    """The KwokctlConfiguration for `kwokctl create cluster`: loopback only, the components'
    `ports` (`PORT_OPTIONS`; kwokctl picks those not given), `components` of
    the toolkit's own beside kwokctl's, and each argument as a component patch (kwokctl
    appends `--flag=value` to the component's command line, after its own flags, so a value
    given here wins over kwokctl's; an `env:NAME` argument is one of the process's
    `extraEnvs`)."""
    config = yaml.safe_load(KWOKCTL_CONFIG)
    config["options"].update(ports or {})
    if components:
        config["components"] = list(components)
    patches: dict[str, dict[str, list[dict[str, str]]]] = {}
    for arg in args:
        patch = patches.setdefault(arg.component, {})
        if arg.env is None:
            patch.setdefault("extraArgs", []).append({"key": arg.flag, "value": arg.value})
        else:
            patch.setdefault("extraEnvs", []).append({"name": arg.env, "value": arg.value})
    if patches:
        config["componentsPatches"] = [{"name": name, **patch} for name, patch in patches.items()]
    return str(yaml.safe_dump(config, sort_keys=False))


def _configured_ports(kwok: Path) -> list[int]:
    """The ports a cluster's kwok.yaml gives its components (`PORT_OPTIONS`)."""
    try:
        documents = list(yaml.safe_load_all(kwok.read_text()))
    except (OSError, yaml.YAMLError):
        return []
    return [
        int(value)
        for doc in documents
        if isinstance(doc, dict) and doc.get("kind") == "KwokctlConfiguration"
        for option, value in (doc.get("options") or {}).items()
        if option in PORT_OPTIONS and isinstance(value, int)
    ]


class _NoDirectProbe(Exception):
    """The kubeconfig names no server, CA and client certificate files to probe with."""


def _readyz(kubeconfig: Path) -> bool:
    """One GET /readyz answered `ok`."""
    found = _get(kubeconfig, "/readyz")
    return found is not None and found[0] == 200 and found[1].strip() == b"ok"


def _nodes_ready(kubeconfig: Path) -> int:
    """How many nodes have the condition Ready True (0 when the server does not answer)."""
    found = _get(kubeconfig, "/api/v1/nodes")
    if found is None or found[0] != 200:
        return 0
    try:
        items = json.loads(found[1]).get("items") or []
    except ValueError:
        return 0
    return sum(
        1
        for node in items
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )
    )


def _get(kubeconfig: Path, path: str) -> tuple[int, bytes] | None:
    """One GET with the kubeconfig's (kwokctl's) server, CA and client certificate: the
    status and body (None: no answer)."""
    try:
        config = yaml.safe_load(kubeconfig.read_text())
        server = urlsplit(config["clusters"][0]["cluster"]["server"])
        ca = config["clusters"][0]["cluster"]["certificate-authority"]
        user = config["users"][0]["user"]
        cert, key = user["client-certificate"], user["client-key"]
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise _NoDirectProbe from exc
    if server.scheme != "https" or not server.hostname:
        raise _NoDirectProbe
    try:
        context = ssl.create_default_context(cafile=ca)
        context.load_cert_chain(cert, key)
        connection = http.client.HTTPSConnection(
            server.hostname, server.port or 443, context=context, timeout=10
        )
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()
    except (OSError, ssl.SSLError, http.client.HTTPException):
        return None


def check_nodes(nodes: int | None) -> None:
    """One-line error for a node count outside 1..MAX_NODES (None: the default)."""
    if nodes is not None and not 1 <= nodes <= MAX_NODES:
        raise CompareError(f"--nodes must be between 1 and {MAX_NODES}, got {nodes}")


def _kube_version() -> str:
    from compare.paths import TOOLS_DIR

    for line in (TOOLS_DIR / "versions.env").read_text().splitlines():
        if line.startswith("KUBE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise CompareError("tools/versions.env has no KUBE_VERSION line")


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie. A killed multi-threaded process's
    leader turns zombie while its other threads still exit - and hold its files, its listening
    sockets among them - so it is dead only once no thread of it is left running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        tasks = [Path(f"/proc/{pid}")]
    for task in tasks:
        try:
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                return True
        except (OSError, IndexError):
            continue
    return False


def _bound(port: int) -> socket.socket | None:
    """A socket listening on 127.0.0.1:`port`, None while the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)
    except OSError:
        sock.close()
        return None
    return sock


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise CompareError(
                f"port {port} on 127.0.0.1 is in use ({exc.strerror}); pick another with --port"
            ) from exc


def _last_line(text: str) -> str:
    """The last line of a tool's stderr; kwokctl logs JSON, so take its error message."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    last = lines[-1]
    try:
        record = json.loads(last)
    except ValueError:
        return last
    if isinstance(record, dict):
        return str(record.get("err") or record.get("msg") or last)
    return last
