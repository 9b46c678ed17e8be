"""What every report format is rendered from."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from compare import approaches
from compare.check import CheckResult
from compare.results import Cell, RunResults, RunSummary, TrialResult, cell_text, seconds
from compare.results.writers import written_by


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
    def resolution_seconds(self) -> float | None:
        """How precise polled times are: the coarsest trial's poll resolution, else the interval.

        None for a watched run: events are timed on receipt, there is no poll resolution.
        """
        values = [t.poll_resolution_seconds for t in self.results.trials]
        recorded = [v for v in values if v is not None]
        return max(recorded) if recorded else self.results.settings.poll_interval_seconds

    def precision_note(self) -> str:
        s = self.results.settings
        if s.settle_seconds > 0:
            what = (
                "Time to heal is the settled heal: from the injection instant to the start of the"
                " healed stretch that then held for the settle period"
                f" ({s.settle_seconds:g} s; p50/p95 over the trials); the first heal, and any"
                " flap before it, is in each trial's evidence."
            )
        else:
            what = (
                "Time to heal is measured from the injection instant to the first reading that"
                " saw the desired state again (p50/p95 over the trials; no settle period)."
            )
        resolution = self.resolution_seconds
        if resolution is not None:
            how = (
                f" Times are precise to about {resolution:.2g} s, the coarsest poll resolution"
                " of the trials."
            )
        else:
            how = " The live state was watched: events are timed on receipt (no poll resolution)"
            if s.recheck_interval_seconds is not None:
                how += (
                    f", and a full re-read every {s.recheck_interval_seconds:g} s cross-checked"
                    " the watch"
                )
            how += "."
        return what + how

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
        if s.poll_interval_seconds is not None:
            observed = f"poll every {s.poll_interval_seconds:g} s"
        else:
            observed = "watched"
            if s.recheck_interval_seconds is not None:
                observed += f" (re-read every {s.recheck_interval_seconds:g} s)"
        settle = f"; settle {s.settle_seconds:g} s" if s.settle_seconds > 0 else ""
        # Each approach's own settings, as it describes them (its heal times may scale with
        # them, or they decide which drift it sees at all).
        own = "".join(f"; {text}" for text in self.approach_settings())
        # The app as what it is: its custom resource's kind (`Memcached memcached`), else a
        # built-in run's WebApp (older files), else a target of charts (`app shop`).
        what = r.app.kind or ("WebApp" if r.target is None else "app")
        return (
            f"{what} {r.app.name}{shape}; {s.trials} {per} per fault and approach;"
            f" heal window {s.heal_window_seconds:g} s{self._windows()}{settle}{own};"
            f" {observed}"
        )

    def approach_settings(self) -> list[str]:
        """Each approach's recorded settings in its own words (`Approach.describe_settings`;
        an approach this toolkit does not know: `name key=value`), registered approaches in
        registry order, then the others in the file's."""
        recorded = self.results.settings.approach_settings
        order = {name: i for i, name in enumerate(approaches.names())}
        ordered = sorted(recorded, key=lambda name: order.get(name, len(order)))
        return [
            approaches.describe_settings(name, recorded[name]) for name in ordered if recorded[name]
        ]

    def _windows(self) -> str:
        """The approaches whose trials had another window than the user's, with why
        (` (NAME 15.25 s: + HelmRelease interval 5 s + 5 % jitter)`), or whose cadence an
        exact window left out."""
        windows = self.results.settings.heal_windows or {}
        parts = []
        for name, w in windows.items():
            if w.cadence is None:
                continue
            if w.cadence_added:
                parts.append(f"{name} {w.heal_window_seconds:g} s: + {w.cadence}")
            else:
                parts.append(f"{name} exact, its {w.cadence} not added")
        return f" ({'; '.join(parts)})" if parts else ""

    def incomplete_line(self) -> str | None:
        if self.results.complete:
            return None
        if self.results.preflight_error:
            return (
                "This run stopped in its preflight, before any trial:"
                f" {self.results.preflight_error}"
            )
        s = self.summary
        return (
            f"This run is incomplete: {s.recorded_trials} of {s.planned_trials} planned trials"
            " were recorded (interrupted or partial); 'not run' cells have no data."
        )

    @functools.cached_property
    def skip_notes(self) -> dict[str, list[str]]:
        """The reasons of the table's skipped cells (a fault with no trials for an approach),
        in table order, each with its cells (`approach/fault`): numbered from 1 as listed."""
        notes: dict[str, list[str]] = {}
        s = self.summary
        for fault in s.faults:
            for approach in s.approaches:
                cell = s.cell(fault.name, approach)
                if cell is not None and cell.skip_reason is not None:
                    notes.setdefault(cell.skip_reason, []).append(f"{approach}/{fault.name}")
        return notes

    def table_text(self, cell: Cell) -> str:
        """A cell of the results table: its words, or for a skipped cell `skipped [n]`, `n`
        the number of its reason under the table (`skipped_lines`)."""
        reason = cell.skip_reason
        if reason is None:
            return cell_text(cell)
        return f"skipped [{list(self.skip_notes).index(reason) + 1}]"

    def skipped_lines(self) -> list[str]:
        """One line per experiment left out of the run (what the app or cluster lacks), per arm
        its preflight left out (its finding), then one per reason of the table's skipped
        cells, numbered as the cells say."""
        lines = [f"{s.name}: {s.reason}" for s in self.results.skipped or []]
        lines += [f"{f.approach} arm: {f.finding}" for f in self.results.preflight_findings or []]
        lines += [
            f"[{number}] {', '.join(cells)}: {reason}"
            for number, (reason, cells) in enumerate(self.skip_notes.items(), start=1)
        ]
        return lines

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

    def no_fault_lines(self) -> list[str]:
        """One line per cell with no-fault trials: they are not heals, and say why."""
        lines = []
        for cell in self.summary.cells.values():
            if cell.no_fault:
                which = [str(t.trial) for t in cell.trials if t.status == "no-fault"]
                trials = f"trial{'s' if len(which) > 1 else ''} {', '.join(which)}"
                lines.append(
                    f"{cell.approach}/{cell.experiment.name}: {cell.no_fault}/{cell.recorded}"
                    f" trials saw no fault ({trials}): the injection changed nothing the judge"
                    " checks, so the fault was not exercised (not counted as healed)"
                )
        return lines

    def chaos_lines(self) -> list[str]:
        """One line per trial whose chaostoolkit verdict disagreed with ours."""
        return [
            f"{t.approach}/{t.experiment} trial {t.trial}: we say {t.status},"
            f" chaostoolkit says {t.evidence.chaos_verdict or 'nothing'}"
            for t in self.summary.chaos_disagreements
        ]

    def cross_check_lines(self) -> list[str]:
        """One line per trial whose periodic re-reads disagreed with the watch."""
        lines = []
        for t in self.summary.cross_check_disagreements:
            check = t.evidence.cross_check
            assert check is not None
            lines.append(
                f"{t.approach}/{t.experiment} trial {t.trial}: {len(check.disagreements)} of"
                f" {check.reads} re-reads disagreed with the watch ({check.disagreements[0]})"
            )
        return lines


def secs(value: float | None) -> str:
    """A duration, or `-` when there is none."""
    return seconds(value) if value is not None else "-"


def settled_text(trial: TrialResult) -> str:
    """The settled heal and who wrote it: `0.90 s by kube-controller-manager (Kubernetes
    itself)`; `-` when it did not settle."""
    who = written_by(trial.evidence.healed_by)
    took = secs(trial.time_to_heal_seconds)
    return f"{took} {who}" if who and trial.time_to_heal_seconds is not None else took


def flaps_text(trial: TrialResult) -> str:
    """`2 (healed 0.10 s, drifted 0.30 s; healed 0.50 s, drifted 0.62 s)`, or `-`."""
    flaps = trial.evidence.flaps
    if not flaps:
        return "-"
    times = "; ".join(
        f"healed {seconds(f.healed_at_seconds)}, drifted {seconds(f.drifted_at_seconds)}"
        for f in flaps
    )
    return f"{len(flaps)} ({times})"


def fault_seen_text(trial: TrialResult, *, detail: bool = True) -> str:
    """`event at 0.01 s: ...`; `-` when not recorded (error trials, schemaVersion 1 files)."""
    seen = trial.evidence.fault_seen
    if seen is None:
        return "-"
    text = f"{seen.how} at {seconds(seen.at_seconds)}"
    return f"{text}: {seen.detail}" if detail and seen.detail else text


def chaos_text(trial: TrialResult) -> str:
    """chaostoolkit's verdict, marked when it disagrees with ours; `-` when not recorded."""
    ev = trial.evidence
    verdict = ev.chaos_verdict or "-"
    if ev.chaos_agrees is False:
        return f"{verdict} (DISAGREES: we say {trial.status})"
    return verdict
