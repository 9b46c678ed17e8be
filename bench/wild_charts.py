"""Measure charts nobody here wrote: the whole catalogue per target file, summarised in Markdown.

    python bench/wild_charts.py --kubeconfig KC TARGET.yaml [TARGET.yaml ...] [--output DIR]
    python bench/wild_charts.py --summarise RUN_DIR [RUN_DIR ...]

Each target file names a public chart (fetched from its own repository: never committed here)
with its helm and flux arms. Each is run with `compare run --target FILE` (every arm it has,
the whole catalogue, default settings) and summarised: trials run, skipped (with the reason),
errors (with the reason), the verdicts per fault and arm, the run's wall time, and whether
its trials had to run one at a time. docs/wild-charts.md holds the figures of one such run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

RUN_TIMEOUT_S = 3600


def _newest(directory: Path) -> Path:
    runs = sorted(p.parent for p in directory.glob("*/results.json"))
    if not runs:
        raise SystemExit(f"{directory}: no run with a results.json")
    return runs[-1]


def run(target: Path, kubeconfig: str, output: Path) -> tuple[Path, float, str]:
    """One `compare run --target`; its run directory, wall time and console output."""
    started = time.monotonic()
    done = subprocess.run(
        [
            *("compare", "run", "--target", str(target), "--kubeconfig", kubeconfig),
            *("--output", str(output)),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    took = time.monotonic() - started
    if not list(output.glob("*/results.json")):
        raise SystemExit(f"{target}: no run ({done.returncode}): {done.stderr.strip()[-400:]}")
    return _newest(output), took, done.stdout + done.stderr


def summarise(run_dir: Path, took: float | None = None, console: str = "") -> str:
    data: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    trials = data["trials"]
    arms = data["settings"]["approaches"]
    counts = Counter((t["approach"], t["status"]) for t in trials)
    lines = [f"### {data.get('target', {}).get('name', run_dir.name)} (run {data['runId']})", ""]
    wall = f"{took:.0f} s" if took is not None else "n/a"
    lines.append(
        f"- trials: {len(trials)} ({data['settings']['parallel']} at a time), wall time {wall}"
    )
    for arm in arms:
        parts = ", ".join(f"{s} {n}" for (a, s), n in sorted(counts.items()) if a == arm)
        lines.append(f"- {arm}: {parts}")
    one_at_a_time = [ln for ln in console.splitlines() if "one at a time" in ln]
    if one_at_a_time:
        lines.append(f"- {one_at_a_time[0].strip()}")
    for skipped in data.get("skipped") or []:
        lines.append(f"- skipped `{skipped['name']}`: {skipped['reason']}")
    for t in trials:
        if t["status"] == "error":
            lines.append(f"- **error** `{t['experiment']}`/{t['approach']}: {t['error']}")
    lines += ["", "| fault | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    cells: dict[str, dict[str, str]] = {}
    for t in trials:
        cell = t["status"]
        if t["status"] == "healed" and t.get("timeToHealSeconds") is not None:
            cell = f"healed in {t['timeToHealSeconds']:.2f} s"
        cells.setdefault(t["experiment"], {})[t["approach"]] = cell
    for name, row in cells.items():
        lines.append(f"| `{name}` | " + " | ".join(row.get(a, "n/a") for a in arms) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", type=Path)
    parser.add_argument("--kubeconfig")
    parser.add_argument("--output", type=Path, default=Path("reports/wild"))
    parser.add_argument("--summarise", nargs="*", type=Path, default=[])
    args = parser.parse_args(argv)
    for run_dir in args.summarise:
        print(summarise(run_dir))
    if args.targets and not args.kubeconfig:
        parser.error("--kubeconfig is required to run targets")
    for target in args.targets:
        run_dir, took, console = run(target, args.kubeconfig, args.output / target.stem)
        print(summarise(run_dir, took, console), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
