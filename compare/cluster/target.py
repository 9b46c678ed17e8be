"""Resolve `--kubeconfig/--context` (or the embedded default) into a reachable cluster."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config

from compare.cluster.embedded import EmbeddedCluster
from compare.errors import CompareError, first_line
from compare.inputfile import parse_yaml, read_bytes, read_text
from compare.kube.deadline import RequestDeadline, bound
from compare.paths import check_cache_dir, home_dir

REACH_TIMEOUT_S = 5.0
# An exec credential plugin (cloud login helpers) gets this long to print its credential.
EXEC_PLUGIN_TIMEOUT_S = 30.0
MAX_KUBECONFIG_BYTES = 16 * 1024 * 1024


def new_api_client(kubeconfig: Path, context: str | None) -> client.ApiClient:
    """A client of its own for the kubeconfig's context.

    The parsed configuration is shared while the file is unchanged: trials and probes make many
    clients, and parsing the kubeconfig (YAML, certificates) each time cost a run real CPU."""
    try:
        info = Path(kubeconfig).stat()
    except OSError as exc:
        # An embedded cluster's kubeconfig goes with the cluster (`compare cluster down` in
        # another terminal during a run): a cluster problem in one line.
        raise CompareError(
            f"kubeconfig {kubeconfig}: {exc.strerror or exc}; was the cluster stopped"
            " (`compare cluster down`)?"
        ) from None
    # Every request bounded: default timeouts and a total deadline (`compare.kube.deadline`).
    return bound(
        client.ApiClient(
            configuration=_configuration(str(kubeconfig), context, info.st_mtime_ns, info.st_size)
        )
    )


@functools.lru_cache(maxsize=16)
def _configuration(path: str, context: str | None, mtime: int, size: int) -> client.Configuration:
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=path, context=context, client_configuration=configuration, persist_config=False
    )
    return configuration


@dataclass(frozen=True)
class ClusterTarget:
    """A cluster every command talks to through one kubeconfig (and optional context)."""

    kubeconfig: Path
    context: str | None = None
    embedded: bool = False

    def api_client(self) -> client.ApiClient:
        return new_api_client(self.kubeconfig, self.context)

    def kubectl_args(self) -> list[str]:
        args = ["--kubeconfig", str(self.kubeconfig)]
        if self.context:
            args += ["--context", self.context]
        return args

    def describe(self) -> str:
        where = "embedded cluster" if self.embedded else "cluster"
        ctx = f", context {self.context}" if self.context else ""
        return f"{where} (kubeconfig {self.kubeconfig}{ctx})"


def resolve_target(
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    start_embedded: bool = True,
) -> ClusterTarget:
    """The user's cluster when --kubeconfig/--context is given, else the embedded one.

    Raises CompareError (one line) for a missing or malformed kubeconfig, an unknown context
    or an unreachable API server, before anything is deployed.
    """
    if kubeconfig is None and context is None:
        check_cache_dir()
        cluster = EmbeddedCluster()
        status = cluster.up() if start_embedded else cluster.status()
        if not status.running:
            raise CompareError(
                "the embedded cluster is not running; start it with `compare cluster up`"
            )
        target = ClusterTarget(status.kubeconfig, None, embedded=True)
    else:
        path = kubeconfig or Path(
            os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or home_dir() / ".kube/config"
        )
        if kubeconfig is None and not path.is_file():
            raise CompareError(
                f"--context {context!r}: no kubeconfig holds it ({path} does not exist);"
                " give --kubeconfig FILE"
            )
        _check_kubeconfig(path, context)
        target = ClusterTarget(path, context, embedded=False)
    check_reachable(target)
    return target


def _check_kubeconfig(path: Path, context: str | None) -> None:
    if not path.exists() and not path.is_symlink():
        raise CompareError(f"kubeconfig {path}: no such file")
    try:
        data = parse_yaml(read_text(path, limit=MAX_KUBECONFIG_BYTES), str(path))
    except CompareError as exc:
        raise CompareError(f"kubeconfig {exc.message}") from None
    if not isinstance(data, dict) or not data.get("clusters"):
        raise CompareError(f"kubeconfig {path}: no clusters defined")
    names = [c.get("name") for c in data.get("contexts") or [] if isinstance(c, dict)]
    if context is not None and context not in names:
        known = ", ".join(str(n) for n in names) or "none"
        raise CompareError(f"kubeconfig {path}: no context {context!r} (known: {known})")
    _check_credentials(path, data, context)
    _check_exec_plugin(path, data, context)


# A credential file (a token, a certificate, a key, a CA bundle) is a few KiB.
MAX_CREDENTIAL_BYTES = 1024 * 1024
_USER_FILES = ("tokenFile", "client-certificate", "client-key")
_CLUSTER_FILES = ("certificate-authority",)
# The auth providers the Kubernetes clients (Python's, and helm's and kubectl's Go) still have:
# gcp and azure were removed in Kubernetes 1.26 in favour of exec plugins.
AUTH_PROVIDERS = ("oidc",)


def _check_credentials(path: Path, data: dict[str, Any], context: str | None) -> None:
    """The context's credential files are regular files of bounded size, read here first: the
    clients read them whole and unbounded (a tokenFile that is a FIFO hung every command, one
    that is /dev/zero grew to gigabytes); an auth-provider the clients lack is named."""
    name = context if context is not None else data.get("current-context")
    ctx = _entry(data, "contexts", name)
    user_name = ctx.get("user")
    user = _entry(data, "users", user_name)
    cluster = _entry(data, "clusters", ctx.get("cluster"))
    provider = user.get("auth-provider")
    if provider is not None:
        kind = provider.get("name") if isinstance(provider, dict) else None
        if kind not in AUTH_PROVIDERS:
            raise CompareError(
                f"kubeconfig {path}: users[{user_name}].user.auth-provider {kind!r} is not"
                " supported by the Kubernetes clients (gcp and azure were removed in 1.26);"
                " use an exec credential plugin (users[].user.exec)"
            )
    base = path.resolve().parent
    files = [(f"users[{user_name}].user.{key}", user.get(key)) for key in _USER_FILES]
    files += [
        (f"clusters[{ctx.get('cluster')}].cluster.{key}", cluster.get(key))
        for key in _CLUSTER_FILES
    ]
    for where, value in files:
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise CompareError(f"kubeconfig {path}: {where}: must be a file's path")
        try:
            read_bytes(base / Path(value).expanduser(), limit=MAX_CREDENTIAL_BYTES)
        except CompareError as exc:
            raise CompareError(f"kubeconfig {path}: {where}: {exc.message}") from None


def _entry(data: dict[str, Any], section: str, name: Any) -> dict[str, Any]:
    for item in data.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            inner = item.get(section.rstrip("s"))
            return inner if isinstance(inner, dict) else {}
    return {}


def _check_exec_plugin(path: Path, data: dict[str, Any], context: str | None) -> None:
    """Run the context's exec credential plugin once, bounded, before the Kubernetes client
    does: the client waits for it without a timeout (a plugin that never answers hung every
    command) and logs a missing one as several lines of noise."""
    name = context if context is not None else data.get("current-context")
    user = _entry(data, "users", _entry(data, "contexts", name).get("user"))
    plugin = user.get("exec")
    if not isinstance(plugin, dict):
        return
    command = plugin.get("command")
    if not isinstance(command, str) or not command:
        raise CompareError(f"kubeconfig {path}: users[].user.exec.command: not given")
    args = [str(a) for a in plugin.get("args") or []]
    env = dict(os.environ)
    for item in plugin.get("env") or []:
        if isinstance(item, dict) and "name" in item:
            env[str(item["name"])] = str(item.get("value", ""))
    info = {"apiVersion": plugin.get("apiVersion"), "kind": "ExecCredential"}
    env["KUBERNETES_EXEC_INFO"] = json.dumps({**info, "spec": {"interactive": False}})
    # Relative commands are resolved against the kubeconfig's directory, as the client does.
    cwd = path.resolve().parent
    try:
        done = subprocess.run(
            [command, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_PLUGIN_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise CompareError(
            f"kubeconfig {path}: exec credential plugin {command!r} not found (not on PATH)"
        ) from None
    except subprocess.TimeoutExpired:
        raise CompareError(
            f"kubeconfig {path}: exec credential plugin {command!r} did not answer within"
            f" {EXEC_PLUGIN_TIMEOUT_S:g} s (killed)"
        ) from None
    except OSError as exc:
        raise CompareError(
            f"kubeconfig {path}: exec credential plugin {command!r}: {exc.strerror or exc}"
        ) from None
    if done.returncode != 0:
        lines = [x for x in done.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
        tail = f": {lines[-1].strip()[:200]}" if lines else ""
        raise CompareError(
            f"kubeconfig {path}: exec credential plugin {command!r} exited with status"
            f" {done.returncode}{tail}"
        )


def check_reachable(cluster: ClusterTarget) -> None:
    """One cheap API call with a short timeout, so an unreachable cluster fails fast."""
    try:
        api = cluster.api_client()
    except (
        config.ConfigException,
        OSError,
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
    ) as exc:
        # The client's loader fails on shapes it did not expect (an auth-provider without its
        # config: AttributeError) as well as on bad files: one line either way.
        raise CompareError(
            f"kubeconfig {cluster.kubeconfig}: {first_line(exc, typed=False)}"
        ) from exc
    host = api.configuration.host
    # Retries would multiply the timeout; one attempt decides.
    api.configuration.retries = 0
    try:
        client.VersionApi(api).get_code(_request_timeout=REACH_TIMEOUT_S)
        # /version is public on most clusters: a call that needs credentials tells a refused
        # login (401) from one that is merely not allowed to list namespaces (403, fine).
        client.CoreV1Api(api).list_namespace(limit=1, _request_timeout=REACH_TIMEOUT_S)
    except RequestDeadline as exc:  # a server that answers, too slowly
        raise CompareError(f"{exc.message} (kubeconfig {cluster.kubeconfig})") from None
    except client.ApiException as exc:
        if exc.status == 401:
            raise CompareError(
                f"cluster at {host} refused the credentials of kubeconfig {cluster.kubeconfig}"
                " (401 Unauthorized)"
            ) from None
        if exc.status == 403:
            return  # reachable and authenticated; authorization is checked by each call
        raise CompareError(f"cluster at {host} answered {exc.status} {exc.reason}") from exc
    except ValueError as exc:  # the client could not read the answer as Kubernetes'
        raise CompareError(
            f"cluster at {host} (kubeconfig {cluster.kubeconfig}) did not answer as a Kubernetes"
            f" API server: {first_line(exc, typed=False)}"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        problem = first_line(exc, typed=False)
        raise CompareError(
            f"cluster at {host} is unreachable (kubeconfig {cluster.kubeconfig}): {problem}"
        ) from exc
    finally:
        api.close()
