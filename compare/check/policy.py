"""The policy file: per approach, which faults it must heal (how fast) or must not heal.

version: 1
requireComplete: true            # an interrupted/partial run breaks the policy
expectations:
  - approach: operator
    faults: all                  # or a list of fault (experiment) names
    except: [operator-down-drift]   # only with `faults: all`
    kinds: [StatefulSet, ConfigMap] # optional, only with `faults: all`: the faults that act
                                 # on an object of these kinds (what the trials record)
    expect: heals                # or does-not-heal, or no-fault
    within: 5                    # seconds, optional, heals only
    statistic: max               # max (default) | p95 | p50 of the healed trials' times
    optional: false              # true: a fault missing from the run is not a violation
    reason: why this is expected (shown with violations)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from compare.approaches import names as approach_names
from compare.errors import CompareError
from compare.inputfile import load_yaml
from compare.judge.kinds import KINDS
from compare.paths import EXPERIMENTS_DIR
from compare.results import Statistic, format_validation_error

DEFAULT_POLICY = EXPERIMENTS_DIR / "policy.yaml"
POLICY_VERSION = 1
MAX_POLICY_BYTES = 1024 * 1024

Name = Annotated[str, Field(min_length=1)]
# heals: every trial healed (settled); does-not-heal: no trial healed; no-fault: every trial's
# injection changed nothing the judge checks (a change the desired state allows).
Expect = Literal["heals", "does-not-heal", "no-fault"]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        # A wrong type is an error, never a coercion (`optional: "no"` is not false).
        strict=True,
    )


class Expectation(_Model):
    """One rule: `approach` is expected to heal (or not) each of `faults`."""

    approach: Name
    faults: Literal["all"] | Annotated[list[Name], Field(min_length=1)]
    except_: list[Name] = Field(default_factory=list, alias="except")
    kinds: Annotated[list[Name], Field(min_length=1)] | None = None
    expect: Expect
    within: float | None = Field(default=None, gt=0)
    statistic: Statistic = "max"
    optional: bool = False
    reason: str | None = None

    @field_validator("approach")
    @classmethod
    def _known_approach(cls, value: str) -> str:
        # An approach the toolkit does not have is a bad policy (exit 2), not a violation.
        if value not in approach_names():
            raise ValueError(f"unknown approach {value!r} (known: {', '.join(approach_names())})")
        return value

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: list[str] | None) -> list[str] | None:
        # The kinds the judge knows are the kinds a fault can act on; a typo is a bad policy.
        for name in value or ():
            if name not in KINDS:
                raise ValueError(f"unknown kind {name!r} (known: {', '.join(sorted(KINDS))})")
        return value

    @field_validator("faults", mode="before")
    @classmethod
    def _all_or_list(cls, value: object) -> object:
        # A lone name is the likely slip; say what is accepted instead of pydantic's union noise.
        if isinstance(value, str) and value != "all":
            raise ValueError(f"must be `all` or a list of fault names (got {value!r})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.expect != "heals" and self.within is not None:
            raise ValueError("`within` only applies to `expect: heals`")
        if self.except_ and self.faults != "all":
            raise ValueError("`except` only applies to `faults: all`")
        if self.kinds is not None and self.faults != "all":
            raise ValueError("`kinds` only applies to `faults: all`")
        if isinstance(self.faults, list) and len(set(self.faults)) != len(self.faults):
            raise ValueError("`faults` lists a fault twice")
        return self

    def covers(self, fault: str, kind: str | None = None) -> bool:
        """Whether this rule names the fault (`all` covers every fault not in `except`, and
        with `kinds` only a fault acting on an object of one of them; `kind` None: unknown)."""
        if self.faults == "all":
            return fault not in self.except_ and self.covers_kind(kind)
        return fault in self.faults

    def covers_kind(self, kind: str | None) -> bool:
        """Whether a fault acting on a `kind` object is this rule's (kinds are matched without
        regard to case: trials record `pod`, `deployment`, ...)."""
        if self.kinds is None:
            return True
        return kind is not None and kind.lower() in {k.lower() for k in self.kinds}

    @property
    def wording(self) -> str:
        """`to heal within 5 s (max)` / `not to heal` / `no fault ...`, for messages."""
        if self.expect == "does-not-heal":
            return "not to heal"
        if self.expect == "no-fault":
            return "no fault (the injection changes nothing the judge checks)"
        if self.within is None:
            return "to heal"
        return f"to heal within {self.within:g} s ({self.statistic})"


class Policy(_Model):
    """A validated policy file."""

    version: Literal[1]
    require_complete: bool = True
    expectations: Annotated[list[Expectation], Field(min_length=1)]

    @model_validator(mode="after")
    def _no_contradictions(self) -> Self:
        # Two rules that demand different outcomes of the same cell can never both hold.
        rules = self.expectations
        for i, first in enumerate(rules):
            for j in range(i + 1, len(rules)):
                second = rules[j]
                if first.approach != second.approach or first.expect == second.expect:
                    continue
                overlap = _overlap(first, second)
                if overlap is not None:
                    raise ValueError(
                        f"expectations[{i}] and expectations[{j}] contradict each other"
                        f" ({first.approach}: {overlap} both {first.expect} and {second.expect})"
                    )
        return self


def _overlap(a: Expectation, b: Expectation) -> str | None:
    """A fault both rules cover, or 'every fault' when both say `all`; None when disjoint.

    A rule with `kinds` overlaps another only through the kinds: which kind a listed fault acts
    on is known from a run, so those contradictions are found when a run is checked."""
    if a.kinds is not None or b.kinds is not None:
        if a.kinds is None or b.kinds is None or a.faults != "all" or b.faults != "all":
            return None
        common = sorted({k.lower() for k in a.kinds} & {k.lower() for k in b.kinds})
        return f"faults on {common[0]} objects" if common else None
    if a.faults == "all" and b.faults == "all":
        return "every fault"
    listed = a.faults if isinstance(a.faults, list) else b.faults
    other = b if listed is a.faults else a
    assert isinstance(listed, list)
    return next((f for f in listed if other.covers(f)), None)


def load_policy(path: Path | None = None) -> Policy:
    """Read and validate a policy file; every problem is one CompareError line."""
    path = path or DEFAULT_POLICY
    if not path.exists() and not path.is_symlink():
        raise CompareError(f"policy file {path}: not found")
    try:
        data = load_yaml(path, limit=MAX_POLICY_BYTES)
    except CompareError as exc:
        raise CompareError(f"policy file {exc.message}") from None
    return parse_policy(data, source=str(path))


def parse_policy(data: object, *, source: str = "policy") -> Policy:
    """Validate a parsed policy; the version is checked first so a newer file says so."""
    if not isinstance(data, dict):
        raise CompareError(f"{source}: expected a mapping with version and expectations")
    if "version" not in data:
        raise CompareError(f"{source}: version: required field is missing (use version: 1)")
    if data["version"] != POLICY_VERSION or isinstance(data["version"], bool):
        raise CompareError(
            f"{source}: version {data['version']!r} is not supported"
            f" (this toolkit reads version {POLICY_VERSION})"
        )
    # YAML 1.1 reads a bare `on`/`yes`/`no` key as a boolean; name it instead of "True".
    bad_keys = _non_string_keys(data)
    if bad_keys:
        raise CompareError(f"{source}: {bad_keys}: keys must be strings")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise CompareError(f"{source}: {format_validation_error(exc)}") from exc


def _non_string_keys(data: object, loc: str = "") -> str | None:
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                return f"{loc or '(top level)'}.{key!r}"
            found = _non_string_keys(value, f"{loc}.{key}" if loc else key)
            if found:
                return found
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found = _non_string_keys(item, f"{loc}[{i}]")
            if found:
                return found
    return None
