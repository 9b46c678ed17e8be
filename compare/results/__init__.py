"""The results contract: the typed model of a run's results.json and how it is stored.

`model` holds the types, `store` saving and loading (`compare run` saves with `save_results`,
`compare report` and `compare check` read with `load_results` / `latest_run`), `stats` the
per-(fault, approach) aggregates both of them judge by. Nothing here talks to a cluster or
renders anything; docs/results-schema.md documents every field.
"""

from compare.results.model import (
    APPROACHES,
    SCHEMA_VERSION,
    STATUSES,
    AppInfo,
    ClusterInfo,
    Evidence,
    ExperimentInfo,
    ObjectUids,
    RunResults,
    RunSettings,
    TrialResult,
    TrialStatus,
)
from compare.results.stats import (
    ApproachVerdict,
    Cell,
    Outcome,
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
    parse_results,
    resolve_results,
    save_results,
    write_text_atomic,
)

__all__ = [
    "APPROACHES",
    "RESULTS_FILE",
    "SCHEMA_VERSION",
    "STATUSES",
    "AppInfo",
    "ApproachVerdict",
    "Cell",
    "ClusterInfo",
    "Evidence",
    "ExperimentInfo",
    "ObjectUids",
    "Outcome",
    "RunResults",
    "RunSettings",
    "RunSummary",
    "Statistic",
    "Times",
    "TrialResult",
    "TrialStatus",
    "cell_text",
    "format_validation_error",
    "latest_run",
    "load_results",
    "parse_results",
    "percentile",
    "resolve_results",
    "save_results",
    "seconds",
    "summarize",
    "write_text_atomic",
]
