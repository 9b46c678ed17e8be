"""The reapply approach's controller, a local process (one per cluster): every interval it
server-side applies every stored manifest (`manifests`), forced and under its own field
manager, so a field a manifest sets that anything else changed is set back within one
interval. Started by `controllers.start` as

    python controller.py --kubeconfig K [--context C] --state DIR --interval S --owner PID

It logs each failed apply (a namespace being deleted refuses new objects) and goes on; it
writes `heartbeat` after every pass (its readiness); it exits when the process that started it
(`--owner`) is gone, so a test session that dies leaves no controller behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from compare.cluster import ClusterTarget
from compare.kube.served import apply_all
from tests.approaches.reapply.manifests import locked, read_all

FIELD_MANAGER = "compare-reapply"
HEARTBEAT = "heartbeat"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reapply_once(cluster: ClusterTarget, directory: Path) -> int:
    """One pass: every stored manifest applied; how many failed (each logged)."""
    failed = 0
    api = cluster.api_client()
    try:
        with locked(directory):
            for stored in read_all(directory):
                try:
                    apply_all(api, stored.objects, field_manager=FIELD_MANAGER,
                              namespace=stored.namespace)  # fmt: skip
                except Exception as exc:  # a controller logs it and goes on
                    failed += 1
                    print(f"{stored.namespace}/{stored.release}: {exc}", flush=True)
    finally:
        api.close()
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--context", default=None)
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--interval", required=True, type=float)
    parser.add_argument("--owner", required=True, type=int)
    args = parser.parse_args(argv)
    cluster = ClusterTarget(args.kubeconfig, args.context)
    print(f"re-applying the manifests of {args.state} every {args.interval:g} s", flush=True)
    while _alive(args.owner):
        started = time.monotonic()
        try:
            reapply_once(cluster, args.state)
        except Exception as exc:  # the cluster did not answer: next pass
            print(f"pass failed: {exc}", flush=True)
        (args.state / HEARTBEAT).write_text(f"{time.time()}\n")
        time.sleep(max(0.0, args.interval - (time.monotonic() - started)))
    print(f"owner {args.owner} is gone: stopping", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
