"""A TCP proxy on 127.0.0.1 for tests that need a connection to the API server to fail.

`cut()` closes it and every connection (the server stops answering); `pause()` freezes it:
connections stay open but no byte moves either way, and new connections are accepted and
left hanging (a partition, or an API server that stopped responding). `resume()` lets the
held bytes through. Point a client at `https://127.0.0.1:<port>`: the embedded API server's
certificate covers 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["LoopbackProxy"]

_TICK_S = 0.05


class LoopbackProxy:
    """A TCP proxy on 127.0.0.1 to `upstream`, which a test can freeze or cut."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = threading.Event()
        self._flowing = threading.Event()
        self._flowing.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _wait_flowing(self) -> bool:
        """Block while paused; False once cut."""
        while not self._flowing.wait(_TICK_S):
            if self._cut.is_set():
                return False
        return not self._cut.is_set()

    def _accept(self) -> None:
        while not self._cut.is_set():
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(downstream,), daemon=True).start()

    def _connect(self, downstream: socket.socket) -> None:
        with self._lock:
            self._sockets.append(downstream)
        if not self._wait_flowing():
            downstream.close()
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=3)
        except OSError:
            downstream.close()
            return
        upstream.settimeout(None)
        with self._lock:
            if self._cut.is_set():
                downstream.close()
                upstream.close()
                return
            self._sockets.append(upstream)
        for a, b in ((downstream, upstream), (upstream, downstream)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                if not self._wait_flowing():
                    break
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def pause(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        self._cut.set()
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
