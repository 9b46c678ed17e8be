"""The trial engine behind `compare run`: plan, deploy, inject, observe, judge, record.

`experiments` loads and validates the catalogue (or a user's files) before anything is
deployed; `trial` carries out one trial in its own namespace; `runner` plays the chaostoolkit
experiment in the trial's thread and timestamps the injection; `observe` watches the
namespace around it; `evidence` and `detect` turn the readings into a verdict; `engine`
schedules the trials and saves results.json. Nothing here prints: the CLI renders progress
and the summary.
"""

from compare.judge import DEFAULT_SETTLE_S
from compare.run.engine import (
    DEFAULT_HEAL_WINDOW_S,
    DEFAULT_PARALLEL,
    DEFAULT_RECHECK_S,
    RunInterrupted,
    RunRequest,
)
from compare.run.experiments import load_experiments
from compare.run.trial import TrialPlan

__all__ = [
    "DEFAULT_HEAL_WINDOW_S",
    "DEFAULT_PARALLEL",
    "DEFAULT_RECHECK_S",
    "DEFAULT_SETTLE_S",
    "RunInterrupted",
    "RunRequest",
    "TrialPlan",
    "load_experiments",
]
