"""What every report format is rendered from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from compare.check import CheckResult
from compare.results import RunResults, RunSummary, TrialResult


@dataclass(frozen=True)
class ReportData:
    """A run's summary, the policy verdict when one was applied, and the output's location."""

    summary: RunSummary
    source: Path  # the results.json the report is regenerated from
    check: CheckResult | None = None
    policy_path: Path | None = None
    # Directory the report will be written to; journal links are made relative to it.
    output_dir: Path | None = None

    @property
    def results(self) -> RunResults:
        return self.summary.results

    @property
    def run_dir(self) -> Path:
        return self.source.parent

    @property
    def resolution_seconds(self) -> float:
        """How precise the times are: the coarsest trial's poll resolution (else the interval)."""
        values = [t.poll_resolution_seconds for t in self.results.trials]
        recorded = [v for v in values if v is not None]
        return max(recorded) if recorded else self.results.settings.poll_interval_seconds

    def precision_note(self) -> str:
        return (
            "Time to heal is measured from the injection instant to the first poll that saw the"
            " desired state again (p50/p95 over the trials); times are precise to about"
            f" {self.resolution_seconds:.2g} s, the coarsest poll resolution of the trials."
        )

    def journal_href(self, trial: TrialResult) -> str | None:
        """The trial's journal as a link that works from where the report is written."""
        if not trial.journal:
            return None
        target = self.run_dir / trial.journal
        base = self.output_dir if self.output_dir is not None else self.run_dir
        try:
            return Path(os.path.relpath(target.resolve(), base.resolve())).as_posix()
        except ValueError:  # another drive on Windows: only an absolute path works
            return target.resolve().as_uri()

    def run_line(self) -> str:
        """`run 2026...-ab12, started 2026-12-02 12:00:00 UTC, complete, embedded v1.36.3`."""
        r = self.results
        started = r.started_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
        state = "complete" if r.complete else "INCOMPLETE (interrupted or partial)"
        where = "embedded cluster" if r.cluster.embedded else f"cluster {r.cluster.server}"
        version = f" {r.cluster.kubernetes_version}" if r.cluster.kubernetes_version else ""
        duration = ""
        if r.finished_at is not None:
            duration = f", took {(r.finished_at - r.started_at).total_seconds():.0f} s"
        return f"run {r.run_id}, started {started}{duration}, {state}, {where}{version}"

    def settings_line(self) -> str:
        r = self.results
        spec = r.app.spec
        shape = ""
        if "replicas" in spec and "image" in spec:
            shape = f" ({spec['replicas']} x {spec['image']})"
        s = r.settings
        per = "trial" if s.trials == 1 else "trials"
        return (
            f"WebApp {r.app.name}{shape}; {s.trials} {per} per fault and approach;"
            f" heal window {s.heal_window_seconds:g} s; poll every {s.poll_interval_seconds:g} s"
        )

    def incomplete_line(self) -> str | None:
        if self.results.complete:
            return None
        s = self.summary
        return (
            f"This run is incomplete: {s.recorded_trials} of {s.planned_trials} planned trials"
            " were recorded (interrupted or partial); 'not run' cells have no data."
        )

    def error_lines(self) -> list[str]:
        """One line per cell with error trials: the first message says what went wrong."""
        lines = []
        for cell in self.summary.cells.values():
            if cell.errors:
                first = next(t for t in cell.trials if t.status == "error")
                lines.append(
                    f"{cell.approach}/{cell.experiment.name}: {cell.errors}/{cell.recorded}"
                    f" trials ended in error (trial {first.trial}: {first.error})"
                )
        return lines
