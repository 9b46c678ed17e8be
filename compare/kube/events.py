"""Events of one object as they arrive: a list+watch of a namespace's Events about one name, each
stamped with its arrival on this machine's clock.

Flux's and Argo CD's Events carry whole-second timestamps only (`lastTimestamp`, no
`eventTime`): read after the fact they cannot time a sub-second detection. Watched while it
happens, each new Event (and each repeat of an aggregated one: a MODIFIED with a higher count)
is stamped when the API server's notification reached us - an upper bound of when the
controller announced it, never earlier. What the initial list holds existed before the watch
started and has no arrival.

One thread follows the watch from the list's resourceVersion; a broken connection reconnects
from the last version, a 410 (history compacted) relists and stamps what the relist shows new.
It stops when told (`stop`) or at its deadline, whichever comes first: a watch never outlives
the trial that started it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from compare.errors import first_line
from compare.kube.served import REQUEST_TIMEOUT

# The longest one watch request may stay open (the deadline ends the watch sooner).
SERVER_TIMEOUT_S = 60
RETRY_S = 0.2


@dataclass(frozen=True)
class Arrival:
    """An Event as it reached this machine: `at` is time.time() of its arrival."""

    at: float
    event: Mapping[str, Any]


def occurrence(event: Mapping[str, Any]) -> tuple[str, Any]:
    """An Event's identity and how often it has happened (a repeat raises its count)."""
    meta = event.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name")), event.get("count")


class EventWatch(threading.Thread):
    """The Events in `namespace` about objects called `name`, stamped on arrival."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str, *, deadline: float):
        super().__init__(name=f"events-{namespace}-{name}", daemon=True)
        self.api, self.namespace, self.name_of = api, namespace, name
        self.ends = time.monotonic() + deadline
        self.errors: list[str] = []
        self._arrivals: list[Arrival] = []
        self._known: set[tuple[str, Any]] = set()
        self._version = ""
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listed = threading.Event()
        self._response: Any = None

    def begin(self, timeout: float = 10.0) -> None:
        """Start and wait until the first list is done (what exists then is not an arrival)."""
        self.start()
        self._listed.wait(timeout)

    def arrivals(self) -> list[Arrival]:
        with self._lock:
            return list(self._arrivals)

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            close_response(response)
        self.join(timeout)

    def _left(self) -> float:
        return self.ends - time.monotonic()

    def _done(self) -> bool:
        return self._stopped.is_set() or self._left() <= 0

    def run(self) -> None:
        relist = True
        while not self._done():
            try:
                if relist:
                    self._list(stamp=self._listed.is_set())
                    self._listed.set()
                relist = self._follow()
            except Exception as exc:  # recorded; retried until stopped or the deadline
                with self._lock:
                    self.errors.append(first_line(exc))
                    del self.errors[:-10]
                self._stopped.wait(RETRY_S)
        self._listed.set()

    def _calls(self) -> Any:
        return client.CoreV1Api(self.api).list_namespaced_event

    def _list(self, *, stamp: bool) -> None:
        response = self._calls()(
            self.namespace,
            field_selector=f"involvedObject.name={self.name_of}",
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        body = json.loads(response.data)
        now = time.time()
        with self._lock:
            for item in body.get("items") or []:
                self._record(item, now if stamp else None)
            self._version = str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _record(self, event: Mapping[str, Any], at: float | None) -> None:
        key = occurrence(event)
        if key in self._known:
            return
        self._known.add(key)
        if at is not None:
            self._arrivals.append(Arrival(at, event))

    def _follow(self) -> bool:
        """One watch connection; True when the history is gone (410) and must be relisted."""
        response = self._calls()(
            self.namespace,
            field_selector=f"involvedObject.name={self.name_of}",
            watch=True,
            resource_version=self._version,
            allow_watch_bookmarks=True,
            timeout_seconds=max(1, min(SERVER_TIMEOUT_S, int(self._left()) + 1)),
            _preload_content=False,
            _request_timeout=(REQUEST_TIMEOUT[0], SERVER_TIMEOUT_S + 5),
        )
        with self._lock:
            self._response = response
        try:
            if self._stopped.is_set():
                return False
            for line in iter_resp_lines(response):
                received = time.time()
                if self._done():
                    return False
                change = json.loads(line)
                kind_of, obj = change.get("type"), change.get("object") or {}
                if kind_of == "ERROR":
                    if obj.get("code") == 410:
                        return True
                    raise RuntimeError(f"watch error {obj.get('code')}: {obj.get('message')}")
                with self._lock:
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if version:
                        self._version = str(version)
                    if kind_of in ("ADDED", "MODIFIED"):
                        self._record(obj, received)
        finally:
            with self._lock:
                self._response = None
            close_response(response)
        return False


def close_response(response: Any) -> None:
    """Close a watch's streaming response, from any thread."""
    with contextlib.suppress(Exception):
        response.shutdown()  # unblocks the thread reading the socket (urllib3 >= 2.3)
    with contextlib.suppress(Exception):
        response.release_conn()
