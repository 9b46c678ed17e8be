"""Soak: N WebApps (default 100) under random faults from the catalogue for `--minutes`.

Faults are the experiment catalogue's own injections (`experiments/*.json`: every experiment
for the operator with a single action - image, replicas, label, env, probe, volume, container
drift, pods, ReplicaSet, Deployment and Service deletions, fields added such as hostNetwork),
run with the experiments' own action functions, `--rate` per second (default 3), each on a
random WebApp whose desired state holds and that has no fault pending. A list+watch of the
namespace judges every event with the project's judge (`compare.judge.problems`: the
operator's built objects with the API's defaults, closed-world, and the rollout): a fault is
seen when the judge first finds a problem after the injection, healed when it finds none
again; heal time is injection -> the event in which the state holds. A fault the judge never
flags (an allowed change) is reported as not drift. Printed: faults injected, healed, not
healed (within `--heal-timeout`), p50/p95 heal time per fault and overall, reconciles and
failures from the operator's health port, its RSS every 10 s (goal: flat within +-10 % after
the warm-up). Never passes or fails.

    .venv/bin/python bench/operator_soak.py [--count 100] [--minutes 10] [--rate 3]
        [--cluster NAME | --kubeconfig FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from chaoslib import substitute
from operator_common import (
    RssSampler,
    add_cluster_args,
    add_output_args,
    apply_webapps,
    bench_target,
    counted,
    counters,
    delete_namespace,
    make_webapp,
    new_namespace,
    operator_info,
    operator_running,
    percentile,
    report,
    wait_for,
    write_json,
)

from compare.approaches import desired_objects
from compare.approaches.operator.process import health
from compare.chaos.cluster import pointed_at
from compare.deploy.charts import webapp_manifest
from compare.deploy.processes import LocalProcess
from compare.errors import first_line
from compare.judge import DesiredObjects, NamespaceWatch, Reading, problems
from compare.run.experiments import configuration_defaults, load_experiments
from compare.run.workload import app_configuration, workload_of
from compare.webapp import WebApp

REPLICAS = 2
APP_PREFIX = "soak-"
WARMUP_S = 60.0
RSS_EVERY_S = 10.0
# Where the catalogue's faults of one WebApp's objects live.
APP_FAULT_MODULES = frozenset(
    {
        "compare.chaos.actions",
        "chaosk8s.deployment.actions",
        "chaosk8s.pod.actions",
        "chaosk8s.replicaset.actions",
        "chaosk8s.service.actions",
    }
)
NOT_APP_FAULTS = frozenset({"stop_operator", "start_operator"})
UNRESOLVED = re.compile(r"\$\{[^}]*\}")


@dataclass(frozen=True)
class Fault:
    name: str  # the experiment's file stem
    module: str
    func: str
    arguments: dict[str, Any]
    defaults: dict[str, Any]  # the experiment's own configuration defaults

    def inject(self, webapp: WebApp, namespace: str) -> None:
        """The action with this WebApp's configuration in place of `${key}`, as a run gives
        it (the experiment's defaults, then the app's parts, its name and namespace),
        substituted by chaoslib itself."""
        configuration = {
            **self.defaults,
            **app_configuration(workload_of(webapp_manifest(webapp)), webapp.name, namespace),
        }
        args = substitute(self.arguments, configuration, {})
        left = UNRESOLVED.search(json.dumps(args))
        if left is not None:  # never an action on a literal "${...}": the bench is wrong
            raise SystemExit(f"{self.name}: no configuration value for {left.group(0)}")
        getattr(importlib.import_module(self.module), self.func)(**args)


@dataclass
class Pending:
    fault: str
    app: str
    injected: float
    seen: bool = False
    healed: float | None = None


@dataclass
class Tally:
    injected: int = 0
    healed: list[float] = field(default_factory=list)
    not_healed: int = 0
    not_drift: int = 0
    failed: int = 0


def catalogue() -> list[Fault]:
    """The catalogue's single-action experiments for the operator that a WebApp meets (as a
    run selects them: `ExperimentSpec.unmet`), without operator stop/start."""
    faults = []
    parts = workload_of(webapp_manifest(make_webapp("probe", replicas=REPLICAS, image="web:v0")))
    for spec in load_experiments():
        actions = [m for m in spec.document["method"] if m["type"] == "action"]
        if "operator" not in spec.approaches or len(actions) != 1:
            continue
        if spec.unmet(embedded=True, workload=parts) is not None:
            continue  # acts on a part the WebApp has not (a ConfigMap, a StatefulSet, ...)
        provider = actions[0]["provider"]
        if (
            provider.get("module") not in APP_FAULT_MODULES
            or provider.get("func") in NOT_APP_FAULTS
        ):
            continue  # faults of the control plane or the operator, not of one WebApp
        faults.append(
            Fault(
                spec.name,
                provider["module"],
                provider["func"],
                provider.get("arguments", {}),
                configuration_defaults(spec.document.get("configuration")),
            )
        )
    return faults


class Judge:
    """Judges every watch event for the apps with a pending fault."""

    def __init__(self, desired: dict[str, DesiredObjects], heal_timeout: float) -> None:
        self.desired = desired
        self.heal_timeout = heal_timeout
        self.pending: dict[str, Pending] = {}
        self.done: list[Pending] = []
        self.lock = threading.Lock()
        self.latest: Reading | None = None

    def on_change(self, received: float, reading: Reading, what: str) -> None:
        # `what` is "<TYPE> <Kind> <name>" (or "<Kind> relisted"); every object of an app is
        # named after it (soak-007, soak-007-<hash>, ...), so only that app is judged again.
        words = what.split()
        owner = words[2][: len(APP_PREFIX) + 3] if len(words) == 3 else None
        with self.lock:
            self.latest = reading
            for app, fault in list(self.pending.items()):
                if owner is not None and owner != app:
                    continue
                found = problems(self.desired[app], reading)
                if not fault.seen:
                    fault.seen = bool(found)
                elif not found:
                    fault.healed = received
                    self.done.append(self.pending.pop(app))

    def holds(self, app: str) -> bool:
        with self.lock:
            reading = self.latest
        return reading is not None and not problems(self.desired[app], reading)

    def free_apps(self) -> list[str]:
        with self.lock:
            busy = set(self.pending)
        return [app for app in self.desired if app not in busy]

    def expire(self, now: float, seen_timeout: float) -> None:
        """Pending faults past their time: never seen (not drift) or not healed."""
        with self.lock:
            for app, fault in list(self.pending.items()):
                age = now - fault.injected
                if (not fault.seen and age > seen_timeout) or age > self.heal_timeout:
                    self.done.append(self.pending.pop(app))


def webapps(count: int) -> list[WebApp]:
    return [
        make_webapp(f"{APP_PREFIX}{i:03d}", replicas=REPLICAS, image=f"web:v{i % 5}")
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100, help="WebApps (default 100, max 1000)")
    parser.add_argument("--minutes", type=float, default=10.0, help="fault time (default 10)")
    parser.add_argument("--rate", type=float, default=3.0, help="faults per second (default 3)")
    parser.add_argument(
        "--heal-timeout",
        type=float,
        default=60.0,
        help="a fault not healed by then counts as not healed",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    add_cluster_args(parser)
    add_output_args(parser)
    args = parser.parse_args()
    if not 1 <= args.count <= 1000:
        parser.error("--count must be between 1 and 1000")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    faults = catalogue()
    with bench_target(args) as target, operator_running(target) as handle, pointed_at(target):
        info = operator_info(handle)
        api = target.api_client()
        namespace = new_namespace(api, "bench-soak")
        apps = {w.name: w for w in webapps(args.count)}
        retries = apply_webapps(api, namespace, apps.values())
        if retries:
            print(f"{retries} WebApp applies retried (the webhook call timed out)")
        with ThreadPoolExecutor(max_workers=8) as pool:
            desired = dict(
                zip(
                    apps,
                    pool.map(
                        lambda w: desired_objects(api, "operator", w, namespace), apps.values()
                    ),
                    strict=True,
                )
            )
        judge = Judge(desired, args.heal_timeout)
        watch = NamespaceWatch(api, namespace, on_change=judge.on_change)
        judge.latest = watch.start()
        try:
            wait_for(
                lambda: all(judge.holds(app) for app in apps),
                timeout=600,
                what="every WebApp's desired state",
                poll=1.0,
            )
            print(
                f"cpus {os.cpu_count()}, {args.count} WebApps x {REPLICAS} replicas, "
                f"{len(faults)} faults from the catalogue, {args.rate:g}/s for "
                f"{args.minutes:g} min, seed {seed}, operator pid {info.pid}"
            )
            result = soak(args, rng, faults, judge, apps, namespace, info)
        finally:
            watch.stop()
        delete_namespace(api, namespace, timeout=600)
    summarise(args, seed, result)


def soak(
    args: argparse.Namespace,
    rng: random.Random,
    faults: list[Fault],
    judge: Judge,
    apps: dict[str, WebApp],
    namespace: str,
    info: LocalProcess,
) -> dict[str, Any]:
    tallies: dict[str, Tally] = {f.name: Tally() for f in faults}
    errors: list[str] = []
    before = counters(health(info))
    interval = 1.0 / args.rate
    with RssSampler(info.pid, RSS_EVERY_S) as rss:
        start = time.monotonic()
        end = start + args.minutes * 60
        next_at = start
        while time.monotonic() < end:
            judge.expire(time.time(), seen_timeout=15.0)
            free = judge.free_apps()
            rng.shuffle(free)
            app = next((a for a in free if judge.holds(a)), None)
            if app is not None:
                fault = rng.choice(faults)
                pending = Pending(fault.name, app, time.time())
                with judge.lock:
                    judge.pending[app] = pending
                try:
                    fault.inject(apps[app], namespace)
                    tallies[fault.name].injected += 1
                except Exception as exc:  # an action the API refused: counted, not a heal
                    with judge.lock:
                        judge.pending.pop(app, None)
                    tallies[fault.name].failed += 1
                    errors.append(f"{fault.name} on {app}: {first_line(exc)}")
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        injecting = time.monotonic() - start
        # What is still pending gets its full heal window.
        drain = time.time() + args.heal_timeout + 1
        while judge.pending and time.time() < drain:
            judge.expire(time.time(), seen_timeout=15.0)
            time.sleep(0.5)
        judge.expire(float("inf"), seen_timeout=15.0)
    after = counters(health(info))
    for done in judge.done:
        tally = tallies[done.fault]
        if done.healed is not None:
            tally.healed.append(done.healed - done.injected)
        elif not done.seen:
            tally.not_drift += 1
        else:
            tally.not_healed += 1
    return {
        "tallies": tallies,
        "errors": errors,
        "rss": rss.samples,
        "injecting_s": injecting,
        **counted(before, after),
    }


def summarise(args: argparse.Namespace, seed: int, result: dict[str, Any]) -> None:
    tallies: dict[str, Tally] = result["tallies"]

    def row(name: str, tally: Tally) -> list[Any]:
        p50, p95 = percentile(tally.healed, 50), percentile(tally.healed, 95)
        return [
            name,
            tally.injected,
            len(tally.healed),
            tally.not_healed,
            tally.not_drift,
            tally.failed,
            "" if p50 is None else p50,
            "" if p95 is None else p95,
        ]

    total = Tally()
    for tally in tallies.values():
        total.injected += tally.injected
        total.healed += tally.healed
        total.not_healed += tally.not_healed
        total.not_drift += tally.not_drift
        total.failed += tally.failed
    rows = [row(name, t) for name, t in sorted(tallies.items()) if t.injected or t.failed]
    rows.append(row("all", total))
    report(
        f"soak: {args.count} WebApps, {result['injecting_s'] / 60:.1f} min of faults at "
        f"{args.rate:g}/s (seed {seed}); heal time in seconds",
        rows,
        ["fault", "injected", "healed", "not healed", "not drift", "refused", "p50", "p95"],
    )
    samples: list[tuple[float, float]] = result["rss"]
    warm = [mib for t, mib in samples if t >= WARMUP_S] or [mib for _, mib in samples]
    base = warm[0] if warm else 0.0
    spread = max(abs(m - base) / base for m in warm) * 100 if base else 0.0
    report(
        "operator",
        [
            ["reconciles / children written", f"{result['reconciles']} / {result['changes']}"],
            ["failed reconciles", result["failures"]],
            [f"RSS after {WARMUP_S:.0f} s warm-up: first / min / max / last (MiB)",
             f"{base:.0f} / {min(warm):.0f} / {max(warm):.0f} / {warm[-1]:.0f}"
             if warm else "no samples"],
            ["RSS largest deviation from the first (goal <= 10 %)", f"{spread:.1f} %"],
        ],
        ["", "value"],
    )  # fmt: skip
    print("RSS every 10 s (MiB): " + " ".join(f"{mib:.0f}" for _, mib in samples))
    for error in result["errors"][:10]:
        print(f"  refused: {error}")
    write_json(
        args.json,
        {
            "count": args.count,
            "minutes": args.minutes,
            "rate": args.rate,
            "seed": seed,
            "faults": {
                name: {
                    "injected": t.injected,
                    "healed": len(t.healed),
                    "not_healed": t.not_healed,
                    "not_drift": t.not_drift,
                    "refused": t.failed,
                    "heal_s": t.healed,
                }
                for name, t in tallies.items()
            },
            "heal_p50_s": percentile(total.healed, 50),
            "heal_p95_s": percentile(total.healed, 95),
            "reconciles": result["reconciles"],
            "failures": result["failures"],
            "rss_mib": samples,
            "rss_deviation_pct": spread,
            "errors": result["errors"],
        },
    )


if __name__ == "__main__":
    main()
