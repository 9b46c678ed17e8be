"""The results contract: the typed model of a run's results.json and how it is stored.

`compare run` builds a `RunResults` and saves it with `save_results`; `compare report` and
`compare check` read it back with `load_results` / `latest_run`. Nothing here talks to a
cluster or renders anything; docs/results-schema.md documents every field.
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
from compare.results.store import (
    RESULTS_FILE,
    latest_run,
    load_results,
    parse_results,
    save_results,
    write_text_atomic,
)

__all__ = [
    "APPROACHES",
    "RESULTS_FILE",
    "SCHEMA_VERSION",
    "STATUSES",
    "AppInfo",
    "ClusterInfo",
    "Evidence",
    "ExperimentInfo",
    "ObjectUids",
    "RunResults",
    "RunSettings",
    "TrialResult",
    "TrialStatus",
    "latest_run",
    "load_results",
    "parse_results",
    "save_results",
    "write_text_atomic",
]
