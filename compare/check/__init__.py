"""Policies over results: what each approach is expected to heal, and whether a run holds them.

`policy` is the validated policy file (experiments/policy.yaml by default; docs/ci.md documents
it), `evaluate` applies it to a run's cells and yields one verdict per expectation and fault.
Pure: it reads results.json data, never a cluster.
"""

from compare.check.evaluate import CheckResult, Verdict, evaluate
from compare.check.policy import DEFAULT_POLICY, load_policy, parse_policy

__all__ = [
    "DEFAULT_POLICY",
    "CheckResult",
    "Verdict",
    "evaluate",
    "load_policy",
    "parse_policy",
]
