"""Reading a WebApp manifest file, with one-line errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from compare.errors import CompareError
from compare.inputfile import load_yaml
from compare.paths import DEFAULT_APP
from compare.webapp.spec import WebApp, policy_violations

# A WebApp is a few hundred bytes; etcd's own object limit is 1.5 MiB.
MAX_WEBAPP_BYTES = 1024 * 1024


def load_webapp(path: Path | None = None) -> WebApp:
    """Load and validate a WebApp manifest (the default example when path is None)."""
    path = path or DEFAULT_APP
    return parse_webapp(load_yaml(path, limit=MAX_WEBAPP_BYTES), source=str(path))


def parse_webapp(data: Any, *, source: str = "WebApp") -> WebApp:
    """Validate a parsed manifest; errors name the source and the first bad field."""
    if not isinstance(data, dict):
        raise CompareError(f"{source}: expected a WebApp mapping, got {type(data).__name__}")
    try:
        webapp = WebApp.model_validate(data)
    except ValidationError as exc:
        raise CompareError(f"{source}: {format_validation_error(exc)}") from exc
    problems = policy_violations(webapp.spec)
    if problems:
        raise CompareError(f"{source}: {problems[0]}")
    return webapp


def format_validation_error(exc: ValidationError) -> str:
    """The first error as `field.path: message` (pydantic's own wording, shortened)."""
    first = exc.errors()[0]
    loc = ""
    for part in first["loc"]:
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    loc = loc or "(root)"
    kind = first["type"]
    if kind == "missing":
        return f"{loc}: required field is missing"
    if kind == "extra_forbidden":
        return f"{loc}: unknown field"
    msg = first["msg"].removeprefix("Value error, ")
    if kind.endswith("_type") and "input" in first:
        # A wrong type is never coerced: show what was given (`"3"` is a string, not 3).
        given = first["input"]
        shown = repr(given) if len(repr(given)) <= 40 else repr(given)[:37] + "..."
        msg += f" (got {type(given).__name__} {shown})"
    return f"{loc}: {msg}"
