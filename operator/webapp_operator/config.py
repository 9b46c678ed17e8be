"""The operator process's settings, parsed from its command line (`python -m webapp_operator`).

Defaults are the in-cluster ones (config/manager): all namespaces, leader election on the
`webapp-operator-leader` Lease in webapp-system, 30 s resync, webhook on 0.0.0.0:9443 with the
certificate mounted from a Secret. The local runner (compare/approaches/operator/process.py)
passes loopback addresses, a kubeconfig and the cache directory's certificate.
"""

from __future__ import annotations

import argparse
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

from webapp_operator.leader import LeaseConfig
from webapp_operator.names import (
    DEFAULT_HEALTH_PORT,
    DEFAULT_WEBHOOK_PORT,
    LEASE_NAME,
    OPERATOR_NAMESPACE,
    REGISTRY_CONFIGMAP,
)

__all__ = ["OperatorConfig", "WebhookConfig", "parse_args"]


@dataclass(frozen=True)
class WebhookConfig:
    addr: str
    port: int
    cert_dir: Path
    host: str | None = None  # how the apiserver reaches us, when not `addr`


@dataclass(frozen=True)
class OperatorConfig:
    kubeconfig: str | None
    context: str | None
    namespaces: tuple[str, ...]  # empty: every namespace
    resync_seconds: float
    lease: LeaseConfig | None  # None: no leader election (a single replica)
    webhook: WebhookConfig | None
    webhook_only: bool  # serve admission only: no reconcile, no Lease
    health_addr: str
    health_port: int  # 0: no health endpoints
    operator_namespace: str
    registry_name: str
    backoff_base: float
    backoff_cap: float
    log_level: str
    # A child's drift healed from its watch event on the event loop (`fastheal`); off: every
    # correction goes through the reconcile.
    hot_heal: bool = True


def _identity() -> str:
    """Unique per process, readable: the pod (host) name plus a random suffix, as client-go."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m webapp_operator",
        description="The WebApp operator: reconciles example.com/v1 WebApps into a Deployment "
        "and a Service, heals drift, validates WebApps (webhook), leads via a Lease.",
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        "-n",
        action="append",
        default=[],
        metavar="NS",
        help="watch only this namespace (repeatable)",
    )
    scope.add_argument(
        "--all-namespaces", "-A", action="store_true", help="watch every namespace (default)"
    )
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, else $KUBECONFIG)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument(
        "--resync-seconds",
        type=_positive,
        default=30.0,
        help="reconcile every WebApp at least this often (seed: RequeueAfter 30s)",
    )
    p.add_argument(
        "--operator-namespace",
        default=OPERATOR_NAMESPACE,
        help="namespace of the Lease and the registry ConfigMap",
    )
    p.add_argument("--registry-name", default=REGISTRY_CONFIGMAP, help=argparse.SUPPRESS)
    lease = p.add_argument_group("leader election")
    lease.add_argument(
        "--no-leader-elect",
        dest="leader_elect",
        action="store_false",
        help="run without a Lease (only safe with a single replica)",
    )
    lease.add_argument("--lease-name", default=LEASE_NAME)
    lease.add_argument("--lease-duration", type=_positive, default=15.0, metavar="SECONDS")
    lease.add_argument("--lease-renew-deadline", type=_positive, default=10.0, metavar="SECONDS")
    lease.add_argument("--lease-retry-period", type=_positive, default=2.0, metavar="SECONDS")
    lease.add_argument("--identity", default=None, help="leader-election identity (unique)")
    hook = p.add_argument_group("admission webhook")
    hook.add_argument(
        "--webhook-only",
        action="store_true",
        help="serve the validating webhook only (no reconcile, no Lease): for a webhook "
        "Deployment whose replicas all serve",
    )
    hook.add_argument(
        "--webhook-port",
        type=int,
        default=DEFAULT_WEBHOOK_PORT,
        help="HTTPS port of the validating webhook; 0 disables it",
    )
    hook.add_argument("--webhook-addr", default="0.0.0.0", help="address to listen on")
    hook.add_argument(
        "--webhook-host", default=None, help="address the API server uses to reach the webhook"
    )
    hook.add_argument(
        "--webhook-cert-dir",
        type=Path,
        default=Path("/certs"),
        help="directory holding tls.crt and tls.key",
    )
    p.add_argument("--health-addr", default="0.0.0.0")
    p.add_argument(
        "--health-port",
        type=int,
        default=DEFAULT_HEALTH_PORT,
        help="/healthz and /readyz; 0 disables them",
    )
    p.add_argument(
        "--backoff-base",
        type=_positive,
        default=0.5,
        metavar="SECONDS",
        help="first retry delay after a failed reconcile (doubles each time)",
    )
    p.add_argument(
        "--backoff-cap", type=_positive, default=60.0, metavar="SECONDS", help="longest retry delay"
    )
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument(
        "--no-hot-heal",
        dest="hot_heal",
        action="store_false",
        help="correct every drift through the reconcile, none from the watch event at once",
    )
    return p


def parse_args(argv: list[str] | None = None) -> OperatorConfig:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.webhook_only and not args.webhook_port:
        parser.error("--webhook-only needs a --webhook-port")
    lease = None
    if args.leader_elect and not args.webhook_only:
        try:
            lease = LeaseConfig(
                namespace=args.operator_namespace,
                name=args.lease_name,
                identity=args.identity or _identity(),
                duration=args.lease_duration,
                renew_deadline=args.lease_renew_deadline,
                retry_period=args.lease_retry_period,
            )
        except ValueError as exc:
            parser.error(str(exc))
    webhook = None
    if args.webhook_port:
        webhook = WebhookConfig(
            addr=args.webhook_addr,
            port=args.webhook_port,
            cert_dir=args.webhook_cert_dir,
            host=args.webhook_host,
        )
        for name in ("tls.crt", "tls.key"):
            if not (webhook.cert_dir / name).is_file():
                parser.error(f"--webhook-cert-dir {webhook.cert_dir}: no {name}")
    return OperatorConfig(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespaces=tuple(args.namespace),
        resync_seconds=args.resync_seconds,
        lease=lease,
        webhook=webhook,
        webhook_only=args.webhook_only,
        health_addr=args.health_addr,
        health_port=args.health_port,
        operator_namespace=args.operator_namespace,
        registry_name=args.registry_name,
        backoff_base=args.backoff_base,
        backoff_cap=args.backoff_cap,
        log_level=args.log_level,
        hot_heal=args.hot_heal,
    )
