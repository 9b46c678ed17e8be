"""A failed `compare deploy` leaves nothing half-done: what it created is removed again.

`Rollback` records, before the first write, whether the namespace and the release or WebApp
already existed; when the deploy fails (an error, Ctrl-C), it removes what this deploy created
- the new Helm release, the new WebApp CR, the namespace it created - and leaves everything
that was there before. An upgrade of an existing release or WebApp is not undone (Helm keeps
its history; `helm rollback` is the user's call).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from kubernetes import client

from compare import kube
from compare.cluster import ClusterTarget
from compare.errors import CompareError, first_line
from compare.kube.apierror import if_found

NAMESPACE_GONE_TIMEOUT_S = 60.0


def namespace_exists(cluster: ClusterTarget, namespace: str) -> bool:
    api = cluster.api_client()
    try:
        found = if_found(
            f"reading namespace {namespace} failed", client.CoreV1Api(api).read_namespace, namespace
        )
    finally:
        api.close()
    return found is not None


def delete_namespace(cluster: ClusterTarget, namespace: str, *, timeout: float) -> None:
    """Delete the namespace and wait until it is gone (its finalizers run)."""
    api = cluster.api_client()
    try:
        kube.delete_namespace(api, namespace, timeout=timeout)
    finally:
        api.close()


class Rollback:
    """`with Rollback(target, ns, existed=..., remove=...):` around the writes of a deploy.

    `existed`: whether the release / WebApp was there before (then nothing is removed but a
    namespace this deploy created, which cannot hold it); `remove`: removes the new release /
    WebApp and waits until its objects are gone. The rollback's outcome is added to the
    CompareError's line (other exceptions: reported on `warn`); the error is re-raised."""

    def __init__(
        self,
        cluster: ClusterTarget,
        namespace: str,
        *,
        existed: bool,
        remove: Callable[[], object],
        warn: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.existed = existed
        self.remove = remove
        self.warn = warn
        self.namespace_existed = namespace_exists(cluster, namespace)

    def __enter__(self) -> Rollback:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or self.existed:
            return
        undone: list[str] = []
        try:
            self.remove()
            if not self.namespace_existed:
                delete_namespace(self.cluster, self.namespace, timeout=NAMESPACE_GONE_TIMEOUT_S)
                undone.append(f"namespace {self.namespace}")
        except (Exception, KeyboardInterrupt) as failure:
            self._tell(exc, f"rollback incomplete: {first_line(failure)}")
            return
        what = " and ".join(["what this deploy created", *undone])
        self._tell(exc, f"rolled back: removed {what}")

    def _tell(self, exc: BaseException, text: str) -> None:
        # The error stays one line: the rollback's outcome is added to it.
        if isinstance(exc, CompareError):
            exc.message = f"{exc.message}; {text}"
        else:
            self.warn(text)
