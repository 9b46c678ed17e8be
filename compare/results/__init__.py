"""The results contract: the typed model of a run's results.json and how it is stored.

`model` holds the types (schemaVersion 4), `migrate` the in-memory upgrade of older files,
`store` saving and loading (`compare run` saves with `save_results_json`,
`compare report` and `compare check` read with `load_results` / `latest_run`), `stats` the
per-(fault, approach) aggregates both of them judge by. Nothing here talks to a cluster or
renders anything; docs/results-schema.md documents every field.
"""

from compare.results.migrate import upgrade
from compare.results.model import (
    SCHEMA_VERSION,
    STATUSES,
    AppInfo,
    ApproachWindow,
    ClusterInfo,
    CrossCheck,
    Evidence,
    ExperimentInfo,
    FaultSeen,
    Flap,
    ObjectUids,
    PreflightFinding,
    RunResults,
    RunSettings,
    SkippedExperiment,
    TargetInfo,
    TrialResult,
    chaos_agrees,
)
from compare.results.stats import (
    Cell,
    RunSummary,
    Statistic,
    Times,
    cell_text,
    percentile,
    seconds,
    summarize,
)
from compare.results.store import (
    RESULTS_FILE,
    format_validation_error,
    latest_run,
    load_results,
    resolve_results,
    save_results_json,
)

__all__ = [
    "RESULTS_FILE",
    "SCHEMA_VERSION",
    "STATUSES",
    "AppInfo",
    "ApproachWindow",
    "Cell",
    "ClusterInfo",
    "CrossCheck",
    "Evidence",
    "ExperimentInfo",
    "FaultSeen",
    "Flap",
    "ObjectUids",
    "PreflightFinding",
    "RunResults",
    "RunSettings",
    "RunSummary",
    "SkippedExperiment",
    "Statistic",
    "TargetInfo",
    "Times",
    "TrialResult",
    "cell_text",
    "chaos_agrees",
    "format_validation_error",
    "latest_run",
    "load_results",
    "percentile",
    "resolve_results",
    "save_results_json",
    "seconds",
    "summarize",
    "upgrade",
]
