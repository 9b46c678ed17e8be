"""The local operator's supervisor: what the kubelet's `restartPolicy: Always` is in a cluster.

An operator replica that loses its Lease exits rather than lead again with stale memory (as
controller-runtime's do), and in a cluster its container is restarted. The local runner's
process has no kubelet, so this small parent does that job:

    python -m compare.deploy.supervise [--first-delay SECONDS] -- <python> -m webapp_operator ...

It runs the operator as its child, restarts it when it exits with an error (1 s, doubling to
10 s; reset once a child ran for a minute), passes SIGTERM/SIGINT on and exits with the child's
code once it stopped on request. A child that cannot start (failing right after its start, three
times in a row: a bad kubeconfig, missing RBAC) is given up on, so the runner reports its error;
a child that exits because it lost its Lease (`EXIT_LEASE_LOST`: it did start, and led) is
always restarted, however often and however soon, as the kubelet would: on a starved machine a
leader can miss its renew deadline right after taking the Lease, and giving up then would leave
the cluster without an operator for the rest of the run.

The restarted child keeps its `--identity`, so it re-acquires its own Lease at once instead of
waiting out a lease duration, as a restarted container of the same pod would. The runner starts
the supervisor in a session of its own and signals the whole process group, so a SIGKILL takes
both.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType

from compare.kube import poll
from webapp_operator.names import EXIT_LEASE_LOST

__all__ = ["main"]

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 10.0
STABLE_S = 60.0  # a child that ran this long resets the delay
# A child that fails this soon after its start, this many times in a row, cannot start (a bad
# kubeconfig, missing RBAC): give up, so the runner reports its start-up error.
QUICK_S = 10.0
QUICK_FAILURES = 3


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} supervisor: {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    first_delay = FIRST_DELAY_S
    if args[:1] == ["--first-delay"] and len(args) > 1:  # tests restart quicker
        try:
            first_delay = float(args[1])
        except ValueError:
            first_delay = -1.0
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or not 0 < first_delay <= MAX_DELAY_S:
        print(
            "usage: python -m compare.deploy.supervise [--first-delay SECONDS] -- COMMAND...",
            file=sys.stderr,
        )
        return 2
    stopping = False
    child: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    delay = first_delay
    quick = 0
    while True:
        started = time.monotonic()
        child = subprocess.Popen(args)
        code = child.wait()
        if stopping or code == 0:
            return code
        ran = time.monotonic() - started
        quick = quick + 1 if ran < QUICK_S and code != EXIT_LEASE_LOST else 0
        if quick >= QUICK_FAILURES:
            _log(f"the operator exited with {code} {quick} times right after starting; giving up")
            return code
        if ran >= STABLE_S:
            delay = first_delay
        why = " (it lost its Lease)" if code == EXIT_LEASE_LOST else ""
        _log(f"the operator exited with {code}{why}; restarting it in {delay:g}s")
        poll(lambda: stopping, deadline=delay)
        if stopping:
            return code
        delay = min(MAX_DELAY_S, delay * 2)


if __name__ == "__main__":
    sys.exit(main())
