"""Reading a WebApp manifest file, with one-line errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from compare.errors import CompareError
from compare.paths import EXAMPLES_DIR
from compare.webapp.spec import WebApp, policy_violations

DEFAULT_APP = EXAMPLES_DIR / "webapp.yaml"


def load_webapp(path: Path | None = None) -> WebApp:
    """Load and validate a WebApp manifest (the default example when path is None)."""
    path = path or DEFAULT_APP
    try:
        text = path.read_text()
    except OSError as exc:
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise CompareError(f"{path}: not valid YAML{line}") from exc
    return parse_webapp(data, source=str(path))


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
    loc = ".".join(str(part) for part in first["loc"]) or "(root)"
    kind = first["type"]
    if kind == "missing":
        return f"{loc}: required field is missing"
    if kind == "extra_forbidden":
        return f"{loc}: unknown field"
    msg = first["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}"
