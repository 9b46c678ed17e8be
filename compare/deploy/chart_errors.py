"""Turning helm's stderr into one line: schema violations name the values field.

Helm reports a values.schema.json violation as a block, e.g.

    Error: values don't meet the specifications of the schema(s) in the following chart(s):
    webapp:
    - at '/replicaCount': minimum: got -1, want 0

which becomes `values: replicaCount: must be >= 0`.
"""

from __future__ import annotations

import re

from pyhelm3 import errors as helm_errors

from compare.errors import EXIT_FAILED, EXIT_USAGE, CompareError

SCHEMA_HEADER = "values don't meet the specifications of the schema"
_VIOLATION = re.compile(r"^\s*- at '(?P<ptr>[^']*)': (?P<msg>.+)$")

# Messages of helm's JSON schema validator, reworded; the first group is the value to show.
_REWORDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^minimum: got (?P<got>\S+), want (?P<want>\S+)$"), "must be >= {want}"),
    (re.compile(r"^maximum: got (?P<got>\S+), want (?P<want>\S+)$"), "must be <= {want}"),
    (
        re.compile(r"^exclusiveMinimum: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must be > {want}",
    ),
    (
        re.compile(r"^exclusiveMaximum: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must be < {want}",
    ),
    (
        re.compile(r"^minLength: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must be at least {want} characters long",
    ),
    (
        re.compile(r"^maxLength: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must be at most {want} characters long",
    ),
    (
        re.compile(r"^minItems: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must have at least {want} items",
    ),
    (
        re.compile(r"^maxItems: got (?P<got>\S+), want (?P<want>\S+)$"),
        "must have at most {want} items",
    ),
    (re.compile(r"^got (?P<got>\S+), want (?P<want>\S+)$"), "must be {want}, got {got}"),
    (re.compile(r"^(?P<got>'.*') does not match pattern '.*'$"), "{got} has an invalid format"),
    # A `false` subschema: a key the chart reserves for itself.
    (re.compile(r"^false schema$"), "not allowed (the chart sets it)"),
]
_MISSING = re.compile(r"^missing propert(?:y|ies) (?P<names>.+)$")
_EXTRA = re.compile(r"^additional propert(?:y|ies) (?P<names>.+) not allowed$")


def field_path(pointer: str) -> str:
    """A JSON pointer as a values path: `/env/0/name` -> `env[0].name`."""
    out = ""
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _join(parent: str, child: str) -> str:
    return f"{parent}.{child}" if parent else child


def _first_name(names: str) -> str:
    return names.split(",")[0].strip().strip("'")


def describe_violation(pointer: str, message: str) -> str:
    """One violation as `field: what is wrong`."""
    where = field_path(pointer)
    missing = _MISSING.match(message)
    if missing:
        return f"{_join(where, _first_name(missing['names']))}: required field is missing"
    extra = _EXTRA.match(message)
    if extra:
        return f"{_join(where, _first_name(extra['names']))}: unknown key"
    text = message
    for pattern, template in _REWORDS:
        found = pattern.match(message)
        if found:
            groups = {
                k: v.replace(",", "") if k == "want" else v for k, v in found.groupdict().items()
            }
            text = template.format(**groups)
            break
    return f"{where or '(root)'}: {text}"


def schema_violation(stderr: str) -> str | None:
    """`values: <field>: <problem>` for helm's schema error (None if stderr is something else)."""
    if SCHEMA_HEADER not in stderr:
        return None
    found = [m for m in map(_VIOLATION.match, stderr.splitlines()) if m]
    if not found:
        return "values: rejected by the chart's values.schema.json"
    first = describe_violation(found[0]["ptr"], found[0]["msg"])
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"values: {first}{more}"


def first_error_line(stderr: str) -> str:
    """Helm's own message without the `Error:` prefix and the noise lines around it."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    line = (errors or lines or ["no output"])[0]
    return line.removeprefix("Error:").strip()


def helm_failure(action: str, exc: helm_errors.Error) -> CompareError:
    """One CompareError for a failed helm command: input errors exit 2, the rest 1."""
    stderr = exc.stderr.decode(errors="replace")
    violation = schema_violation(stderr)
    if violation is not None:
        return CompareError(violation, exit_code=EXIT_USAGE)
    return CompareError(f"{action} failed: {first_error_line(stderr)}", exit_code=EXIT_FAILED)
