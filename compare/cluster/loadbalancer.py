"""The embedded cluster's LoadBalancer address controller: what k3s' servicelb or
cloud-provider-kind do for their clusters, reduced to the address.

Every Service of type LoadBalancer gets one ingress address (`status.loadBalancer.ingress[0].ip`)
from a loopback range (`compare.cluster.embedded.LB_RANGE`), keeps it while it is a
LoadBalancer, and frees it when it is deleted or changed to another type (the address it held is
cleared from its status). `spec.loadBalancerClass` is not looked at: no other implementation
runs on the embedded cluster; nor is the deprecated `spec.loadBalancerIP` (the address is the
range's lowest free one). Nothing listens on the addresses (kwok's pods run no containers):
they are for what reads the API - Argo CD's health of a Service, a chart or a hook that waits
for an address.

Run by kwokctl as a component of the embedded cluster (`compare.cluster.embedded`), started,
stopped and checked with the others. The addresses in use are those the Services' status holds,
so a restarted controller keeps every address; it writes nothing else. One loop, all of it
bounded: list every Service and settle each, then watch from the list's version (the server
ends each watch after WATCH_S); any failure (the API server or etcd restarting, an expired
version) lists again after a short pause, so it outlives a control-plane fault.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from compare.cluster.embedded import LB_COMPONENT, LB_RANGE
from compare.cluster.target import new_api_client
from compare.errors import first_line

REQUEST_TIMEOUT = (3.0, 10.0)
WATCH_S = 60
RETRY_S = (0.1, 1.0)  # the first pause after a failure, the longest
MERGE_PATCH = "application/merge-patch+json"
DESCRIPTION = "Give every LoadBalancer Service of the embedded cluster a loopback address."

Key = tuple[str, str]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}", flush=True)


def ingress_ips(service: Mapping[str, Any]) -> list[str]:
    """The addresses a Service's status holds."""
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [str(item["ip"]) for item in ingress if isinstance(item, dict) and item.get("ip")]


def _key(service: Mapping[str, Any]) -> Key:
    meta = service.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class Addresses:
    """Which Service holds which address of the range, and the settling of one Service."""

    def __init__(self, core: client.CoreV1Api, network: Network) -> None:
        self.core, self.network = core, network
        self.held: dict[Key, str] = {}

    def _ours(self, ip: str) -> bool:
        try:
            return ipaddress.ip_address(ip) in self.network
        except ValueError:
            return False

    def _free(self) -> str:
        """The lowest address of the range nobody holds."""
        taken = set(self.held.values())
        for address in self.network.hosts():
            if str(address) not in taken:
                return str(address)
        raise RuntimeError(f"every address of {self.network} is taken")

    def relist(self) -> str:
        """Settle every Service (the oldest keeps a contested address); the list's version."""
        listed = self.core.api_client.sanitize_for_serialization(
            self.core.list_service_for_all_namespaces(_request_timeout=REQUEST_TIMEOUT)
        )
        items = sorted(
            listed.get("items") or [],
            key=lambda s: (str((s.get("metadata") or {}).get("creationTimestamp") or ""), _key(s)),
        )
        self.held = {}
        # What the Services hold first, then the ones to give an address: none is given twice.
        for service in items:
            self.settle(service, assign=False)
        for service in items:
            self.settle(service)
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def forget(self, service: Mapping[str, Any]) -> None:
        if self.held.pop(_key(service), None) is not None:
            log(f"freed the address of {'/'.join(_key(service))} (deleted)")

    def settle(self, service: Mapping[str, Any], *, assign: bool = True) -> None:
        """Record what `service` holds; give a LoadBalancer without one an address (`assign`),
        clear ours from a Service that is no LoadBalancer any more."""
        key = _key(service)
        ips = ingress_ips(service)
        if (service.get("spec") or {}).get("type") != "LoadBalancer":
            self.held.pop(key, None)
            if assign and any(self._ours(ip) for ip in ips):
                self._patch(key, None)
                log(f"freed {', '.join(ips)} of {'/'.join(key)} (no LoadBalancer now)")
            return
        mine = self.held.get(key)
        if mine is not None and mine in ips:
            return
        kept = next((ip for ip in ips if self._ours(ip)), None)
        holders = {address: who for who, address in self.held.items()}
        if kept is not None and holders.get(kept, key) == key:
            self.held[key] = kept
            return
        if ips and kept is None:
            return  # an address from elsewhere (set by someone else): left alone
        if not assign:
            return
        if (service.get("metadata") or {}).get("deletionTimestamp"):
            return
        address = self._free()
        self._patch(key, address)
        self.held[key] = address
        log(f"gave {address} to {'/'.join(key)}")

    def _patch(self, key: Key, address: str | None) -> None:
        """The Service's status subresource, by a merge patch of its ingress alone."""
        ingress = None if address is None else [{"ip": address, "ipMode": "VIP"}]
        body = {"status": {"loadBalancer": {"ingress": ingress}}}
        try:
            self.core.patch_namespaced_service_status(
                key[1], key[0], body, _content_type=MERGE_PATCH, _request_timeout=REQUEST_TIMEOUT
            )
        except client.ApiException as exc:
            if exc.status != 404:  # deleted meanwhile: its DELETED event follows
                raise


def events(core: client.CoreV1Api, version: str) -> Iterator[dict[str, Any]]:
    """One watch of every Service from `version`, ended by the server after WATCH_S."""
    stream = watch.Watch().stream(
        core.list_service_for_all_namespaces,
        resource_version=version,
        allow_watch_bookmarks=True,
        timeout_seconds=WATCH_S,
        deserialize=False,
        _request_timeout=(REQUEST_TIMEOUT[0], WATCH_S + 10),
    )
    yield from stream


def run(kubeconfig: Path, network: Network) -> None:
    """Settle the Services for ever (SIGTERM or SIGKILL ends it, as kwokctl stops it)."""
    pause = RETRY_S[0]
    log(f"{LB_COMPONENT}: LoadBalancer addresses from {network}")
    while True:
        try:
            api = new_api_client(kubeconfig, None)
            try:
                addresses = Addresses(client.CoreV1Api(api), network)
                version = addresses.relist()
                pause = RETRY_S[0]
                while True:
                    for event in events(addresses.core, version):
                        obj = event.get("object") or {}
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if event.get("type") == "DELETED":
                            addresses.forget(obj)
                        elif event.get("type") in ("ADDED", "MODIFIED"):
                            addresses.settle(obj)
            finally:
                api.close()
        except Exception as exc:  # the API server away, an expired version: list again
            log(f"listing again in {pause:.1f}s: {first_line(exc)}")
            time.sleep(pause)
            pause = min(pause * 2, RETRY_S[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=LB_COMPONENT, description=DESCRIPTION)
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--range", default=LB_RANGE)
    args = parser.parse_args(argv)
    try:
        network = ipaddress.ip_network(args.range)
    except ValueError as exc:
        print(f"{LB_COMPONENT}: --range: {exc}", file=sys.stderr)
        return 1
    run(args.kubeconfig, network)
    return 0
