"""How the extension's activities reach the cluster: the same way chaostoolkit-kubernetes does.

chaosk8s reads the kubeconfig path from the `KUBECONFIG` environment variable and the context
from `KUBERNETES_CONTEXT` (in the activity's secrets or the environment). Our activities read
the same two, so chaosk8s's and ours always act on one cluster. `pointed_at` sets them for an
in-process run (`compare run`).

A run whose cluster-wide faults go to a sibling embedded cluster (`compare.run.engine`) points
those trials' activities at it through their secrets (`trial_secrets`): `KUBERNETES_CONTEXT`
names the sibling's context, which chaosk8s finds in the kubeconfig files `pointed_at` lists
(the client's own `KUBECONFIG`-style merge), and `KUBECONFIG` in the secrets is the sibling's
own kubeconfig for our activities (chaosk8s reads that one from the environment only).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.config import kube_config

from compare.cluster import ClusterTarget, is_local, new_api_client
from compare.results.writers import INJECTION_MANAGER

ENV_KUBECONFIG = "KUBECONFIG"
ENV_CONTEXT = "KUBERNETES_CONTEXT"


def kubeconfig_path(secrets: Mapping[str, Any] | None = None) -> Path:
    first = str((secrets or {}).get(ENV_KUBECONFIG) or "") or os.environ.get(ENV_KUBECONFIG, "")
    first = first.split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def kube_context(secrets: Mapping[str, Any] | None = None) -> str | None:
    value = (secrets or {}).get(ENV_CONTEXT) or os.environ.get(ENV_CONTEXT)
    return str(value) if value else None


def cluster_target(secrets: Mapping[str, Any] | None = None) -> ClusterTarget:
    """The target the environment (or the secrets) names, as `compare` names it (see
    `recognised`); a context that is the kubeconfig's current one is no context at all."""
    path = kubeconfig_path(secrets)
    context = kube_context(secrets)
    if context is not None and context == _current_context(path):
        context = None
    return recognised(ClusterTarget(path, context))


def trial_secrets(target: ClusterTarget) -> dict[str, str]:
    """The secrets that point a trial's activities at `target` (see the module's docstring)."""
    context = target.context or _current_context(target.kubeconfig)
    return {ENV_KUBECONFIG: str(target.kubeconfig), **({ENV_CONTEXT: context} if context else {})}


def listable(kubeconfig: str) -> str:
    """A kubeconfig's text without its `current-context`, to be listed after the run's own in
    `pointed_at`: the kubernetes client's merge of several files takes the current context of
    the last one that has it, which would send every activity without a context (the run's own
    trials) to the listed cluster."""
    data = yaml.safe_load(kubeconfig)
    if not isinstance(data, dict):
        raise ValueError("not a kubeconfig")
    data.pop("current-context", None)
    return str(yaml.safe_dump(data, sort_keys=False))


def _current_context(path: Path) -> str | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_current_context(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read_current_context(path: str, mtime: int, size: int) -> str | None:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    value = data.get("current-context") if isinstance(data, dict) else None
    return str(value) if value else None


def recognised(cluster: ClusterTarget) -> ClusterTarget:
    """Mark a kubeconfig of an embedded cluster as embedded, however it was given
    (`--kubeconfig <its kubeconfig>`, KUBECONFIG in a `chaos run`)."""
    if cluster.embedded or not is_local(cluster):
        return cluster
    return ClusterTarget(cluster.kubeconfig, cluster.context, embedded=True)


def api_client(secrets: Mapping[str, Any] | None = None) -> client.ApiClient:
    """A client of its own (no global default configuration is touched), writing as the
    toolkit's injections (`compare.results.writers.INJECTION_MANAGER`: never a heal's author)."""
    target = cluster_target(secrets)
    return injecting(new_api_client(target.kubeconfig, target.context))


def injecting(api: client.ApiClient) -> client.ApiClient:
    """`api`, its writes recorded under the injections' field manager (the API server names
    a write's manager after its user agent's first word)."""
    api.user_agent = f"{INJECTION_MANAGER}/1"
    return api


@contextmanager
def pointed_at(cluster: ClusterTarget, *others: Path) -> Iterator[None]:
    """Point chaosk8s and this extension at `cluster` while the block runs.

    The kubernetes client reads `KUBECONFIG` once, when it is imported, into the default path
    `load_kube_config` uses (chaosk8s calls it without a path); setting the variable later is
    not enough, so that default is set too. Both are process-wide: one run, one cluster by
    default. `others` (a sibling cluster's kubeconfig) are merged after it into that default,
    the client's own way (`a:b`), so that a trial's `KUBERNETES_CONTEXT` secret can name theirs;
    the first file's current context stays the default: the client takes the *last* file's
    `current-context`, so the others must have none (`listable`).
    """
    saved = {key: os.environ.get(key) for key in (ENV_KUBECONFIG, ENV_CONTEXT)}
    saved_default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    unlock = _clients_one_at_a_time()
    os.environ[ENV_KUBECONFIG] = str(cluster.kubeconfig)
    if cluster.context:
        os.environ[ENV_CONTEXT] = cluster.context
    else:
        os.environ.pop(ENV_CONTEXT, None)
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = os.pathsep.join(
        str(path) for path in (cluster.kubeconfig, *others)
    )
    try:
        yield
    finally:
        unlock()
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = saved_default
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# chaosk8s's client factory loads the kubeconfig into the kubernetes client's process-wide
# default configuration, then builds the client from a copy of it: two trials' activities
# building clients at once (one pointed at the fault cluster by its secrets, one at the run's
# cluster) could each get the other's. One at a time, the copy is always of its own load.
_CLIENT_LOCK = threading.Lock()
FACTORY = "create_k8s_api_client"


def _clients_one_at_a_time() -> Callable[[], None]:
    """Hold `_CLIENT_LOCK` around chaosk8s's `create_k8s_api_client`, in its package (what an
    activity module imported from now on gets) and in every chaosk8s module imported already;
    returns what puts the originals back."""
    import chaosk8s  # the chaostoolkit extension this one runs beside

    original = chaosk8s.create_k8s_api_client

    @functools.wraps(original)
    def one_at_a_time(*args: Any, **kwargs: Any) -> client.ApiClient:
        with _CLIENT_LOCK:
            return injecting(original(*args, **kwargs))

    def swap(old: object, new: object) -> None:
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] == "chaosk8s" and getattr(module, FACTORY, None) is old:
                setattr(module, FACTORY, new)

    swap(original, one_at_a_time)
    return lambda: swap(one_at_a_time, original)
