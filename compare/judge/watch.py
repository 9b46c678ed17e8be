"""A list+watch of one namespace: a cache of the watched kinds, kept current by the API server.

`start` lists every kind (the cache is complete when it returns), then one thread per kind
follows the watch from the list's resourceVersion. Each event updates the cache and calls
`on_change(received, reading)` under one lock (`received` is stamped under it too), so the
callback sees the events of a kind in the API server's order and a consistent cache. A thread
waiting for events blocks on its socket: a trial that waits out its window costs almost no
CPU. A 410 (history compacted) relists; a broken connection reconnects from the last
resourceVersion; `failing_since` tells how long the watch has been unable to reach the API
server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from compare.errors import first_line
from compare.judge.kinds import REQUEST_TIMEOUT, WATCHED, resolve, unscoped
from compare.judge.reading import Obj, Reading, list_raw
from compare.judge.rest import stream
from compare.judge.secrets import hashed_secret
from compare.kube.events import close_response

# The API server ends each watch after this long; the client's read timeout is a bit longer.
SERVER_TIMEOUT_S = 60
RETRY_S = (0.1, 1.0)  # first and longest wait before a reconnect

Callback = Callable[[float, Reading, str], None]


class NamespaceWatch:
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        on_change: Callback | None = None,
        kinds: Sequence[str] = WATCHED,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.kinds = tuple(kinds)
        self.on_change = on_change
        self.errors: list[str] = []
        self._cache: dict[str, dict[str, Obj]] = {k: {} for k in self.kinds}
        self._versions: dict[str, str] = {}
        # kind -> name -> the resourceVersion of its DELETED event (for the cross-check).
        self._gone: dict[str, dict[str, str]] = {k: {} for k in self.kinds}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._responses: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._failing: dict[str, float] = {}

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> Reading:
        """List every kind, start following them; returns the first reading."""
        for name in self.kinds:
            self._relist(name, notify=False)
        for name in self.kinds:
            thread = threading.Thread(
                target=self._follow,
                args=(name,),
                name=f"watch-{self.namespace}-{name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self.reading()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop following; closes the open watch connections so their threads end at once."""
        self._stopped.set()
        with self._lock:
            responses = list(self._responses.values())
        for response in responses:
            close_response(response)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))

    # -- readings -----------------------------------------------------------------------------

    def reading(self) -> Reading:
        with self._lock:
            return self._reading_locked()

    def versions(self) -> dict[str, dict[str, str]]:
        """kind -> name -> resourceVersion of the cached objects."""
        with self._lock:
            return {
                k: {n: str((o.get("metadata") or {}).get("resourceVersion")) for n, o in v.items()}
                for k, v in self._cache.items()
            }

    def deleted(self) -> dict[str, dict[str, str]]:
        """kind -> name -> resourceVersion of the deletions the watch delivered."""
        with self._lock:
            return {k: dict(v) for k, v in self._gone.items()}

    @property
    def failing_since(self) -> float | None:
        """time.time() since when some kind has failed to reconnect (None: all connected)."""
        with self._lock:
            return min(self._failing.values(), default=None)

    def _reading_locked(self) -> Reading:
        return Reading(time.time(), {k: dict(v) for k, v in self._cache.items()})

    # -- following ----------------------------------------------------------------------------

    def _relist(self, name: str, *, notify: bool) -> None:
        body = list_raw(self.api, self.namespace, name)
        items = {item["metadata"]["name"]: item for item in body.get("items") or []}
        with self._lock:
            received = time.time()
            gap = gap_changes(name, self._cache[name], items) if notify else {}
            self._cache[name] = items
            self._versions[name] = str((body.get("metadata") or {}).get("resourceVersion") or "")
            if notify:
                self._notify(received, f"{name} relisted", gap)

    def _follow(self, name: str) -> None:
        delay = RETRY_S[0]
        while not self._stopped.is_set():
            try:
                if self._watch_once(name):
                    self._relist(name, notify=True)
                delay = RETRY_S[0]
                with self._lock:
                    self._failing.pop(name, None)
            except Exception as exc:  # recorded; reconnects until stopped
                if self._stopped.is_set():
                    return
                with self._lock:
                    self._failing.setdefault(name, time.time())
                    self.errors.append(f"watch {name}: {first_line(exc)}")
                    del self.errors[:-20]
                self._stopped.wait(delay)
                delay = min(delay * 2, RETRY_S[1])

    def _watch_once(self, name: str) -> bool:
        """Follow one watch connection; True when the history is gone (410) and must be relisted."""
        with self._lock:
            version = self._versions.get(name, "")
        elsewhere = unscoped(name)[1]
        row = resolve(self.api, name)
        timeout = (REQUEST_TIMEOUT[0], SERVER_TIMEOUT_S + 5)
        if row.served:
            # Any other kind the API server serves: the same watch, by path.
            response = stream(
                self.api,
                row.path(elsewhere or self.namespace),
                query={
                    "watch": "true",
                    "resourceVersion": version or None,
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": SERVER_TIMEOUT_S,
                },
                timeout=timeout,
            )
        else:
            response = row.list_call(self.api)(
                elsewhere or self.namespace,
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=SERVER_TIMEOUT_S,
                _preload_content=False,
                _request_timeout=timeout,
            )
        with self._lock:
            self._responses[name] = response
            self._failing.pop(name, None)
            # stop() sets the flag before it closes the registered responses: one registered
            # after that is closed here, not read until the server's timeout.
            stopped = self._stopped.is_set()
        try:
            if stopped:
                return False
            for line in iter_resp_lines(response):
                if self._stopped.is_set():
                    return False
                event = json.loads(line)
                if self._apply(name, event):
                    return True
        finally:
            with self._lock:
                self._responses.pop(name, None)
            close_response(response)
        return False

    def _apply(self, name: str, event: dict[str, Any]) -> bool:
        kind_of, obj = event.get("type"), event.get("object") or {}
        if unscoped(name)[0] == "Secret":
            obj = hashed_secret({**obj, "kind": "Secret"})
        if kind_of == "ERROR":
            if obj.get("code") == 410:
                return True
            raise RuntimeError(f"watch error {obj.get('code')}: {obj.get('message')}")
        meta = obj.get("metadata") or {}
        name_of = str(meta.get("name"))
        with self._lock:
            # Stamped under the lock: time order is then the cache's order. A stamp taken
            # before it lets a thread that waited for the lock carry an earlier time than a
            # reading made before its own, which then reads as a flap back to the old state.
            received = time.time()
            if meta.get("resourceVersion"):
                self._versions[name] = str(meta["resourceVersion"])
            if kind_of == "BOOKMARK":
                return False
            if kind_of == "DELETED":
                self._cache[name].pop(name_of, None)
                self._gone[name][name_of] = str(meta.get("resourceVersion"))
            else:
                self._cache[name][name_of] = obj
                self._gone[name].pop(name_of, None)
            self._notify(received, f"{kind_of} {name} {meta.get('name')}")
        return False

    def _notify(self, received: float, what: str, gap: dict[str, str] | None = None) -> None:
        if self.on_change is not None:
            reading = self._reading_locked()
            if gap:
                reading = Reading(reading.at, reading.objects, reading.versions, gap)
            self.on_change(received, reading, what)


def gap_changes(kind_name: str, before: dict[str, Obj], after: dict[str, Obj]) -> dict[str, str]:
    """`Kind/name` -> how each object changed between the cache before a relist and the
    relist: replaced (a new uid), gone, new, its generation moved, or - for a kind without a
    generation - its resourceVersion moved. A change and its revert inside the gap still
    show as a moved generation."""
    found: dict[str, str] = {}
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        key = f"{kind_name}/{name}"
        if old is None or new is None:
            found[key] = "created" if old is None else "deleted"
            continue
        m_old, m_new = old.get("metadata") or {}, new.get("metadata") or {}
        if m_old.get("uid") != m_new.get("uid"):
            found[key] = f"replaced: uid {m_old.get('uid')} -> {m_new.get('uid')}"
        elif m_new.get("generation") is not None or m_old.get("generation") is not None:
            if m_old.get("generation") != m_new.get("generation"):
                found[key] = f"generation {m_old.get('generation')} -> {m_new.get('generation')}"
        elif m_old.get("resourceVersion") != m_new.get("resourceVersion"):
            found[key] = (
                f"resourceVersion {m_old.get('resourceVersion')} -> {m_new.get('resourceVersion')}"
            )
    return found
