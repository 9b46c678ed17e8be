"""Saving and loading results.json: atomic writes, one-line errors, finding the latest run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from compare import outputfile
from compare.errors import CompareError
from compare.inputfile import parse_json, read_text
from compare.results.migrate import MigrationError
from compare.results.model import SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS, RunResults

RESULTS_FILE = "results.json"


def save_results_json(data: dict[str, Any], run_dir: Path) -> Path:
    """Write run_dir/results.json, an already serialised RunResults (`RunResults.to_json()`),
    atomically: safe to call after every trial."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return outputfile.write_text(Path(run_dir) / RESULTS_FILE, text)


def results_path(path: Path) -> Path:
    """A run directory or a results file -> the results file."""
    return path / RESULTS_FILE if path.is_dir() else path


def load_results(path: Path) -> RunResults:
    """Read and validate a results file (or a run directory holding results.json).

    Every problem becomes one CompareError line naming the file and, when it is about the
    content, the field (`trials[3].status: ...`).
    """
    file = results_path(Path(path))
    if not file.exists():
        where = f"no {RESULTS_FILE} in {path}" if Path(path).is_dir() else f"{file}: not found"
        raise CompareError(where)
    data = parse_json(read_text(file), str(file))
    return parse_results(data, source=str(file))


def parse_results(data: Any, *, source: str = RESULTS_FILE) -> RunResults:
    """Validate parsed JSON; the schemaVersion is checked first so a newer file says so.

    An older document (schemaVersion 1, 2 or 3) is upgraded in memory (compare.results.migrate):
    the result is always the current model, and saving it writes the current version.
    """
    if not isinstance(data, dict):
        raise CompareError(f"{source}: expected a JSON object, got {_json_type(data)}")
    if "schemaVersion" not in data:
        raise CompareError(f"{source}: schemaVersion: required field is missing")
    version = data["schemaVersion"]
    if version not in SUPPORTED_SCHEMA_VERSIONS or isinstance(version, bool):
        *older, newest = (str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
        readable = f"{', '.join(older)} and {newest}" if older else newest
        raise CompareError(
            f"{source}: schemaVersion {json.dumps(version)} is not supported"
            f" (this toolkit reads {readable}; it writes {SCHEMA_VERSION})"
        )
    try:
        return RunResults.from_json(data)
    except MigrationError as exc:
        raise CompareError(f"{source}: {exc}") from exc
    except ValidationError as exc:
        raise CompareError(f"{source}: {format_validation_error(exc)}") from exc


def format_validation_error(exc: ValidationError) -> str:
    """The first error as `trials[2].evidence.readyPods: message`, plus how many more."""
    errors = exc.errors()
    first = errors[0]
    loc = ""
    for part in first["loc"]:
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    kind = first["type"]
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field"
    else:
        msg = first["msg"].removeprefix("Value error, ")
        if "input" in first and kind not in ("value_error", "assertion_error"):
            msg += f" (got {_short(first['input'])})"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{loc or '(top level)'}: {msg}{more}"


def resolve_results(run: Path | None, reports_dir: Path) -> Path:
    """The results file a command means: the given run dir / file, else the latest run's."""
    if run is None:
        return latest_run(reports_dir) / RESULTS_FILE
    if not run.exists():
        if run.is_symlink():
            read_text(run)  # names it: a symlink loop, or to nothing
        raise CompareError(f"{run}: no such run directory or results file")
    file = results_path(run)
    if not file.exists() and not file.is_symlink():
        raise CompareError(f"no {RESULTS_FILE} in {run}")
    return file


def latest_run(reports_dir: Path) -> Path:
    """The newest run directory (by its results.json's modification time) in reports_dir."""
    reports_dir = Path(reports_dir)
    candidates = (
        [d for d in reports_dir.iterdir() if (d / RESULTS_FILE).is_file()]
        if reports_dir.is_dir()
        else []
    )
    if not candidates:
        raise CompareError(
            f"no run with a {RESULTS_FILE} under {reports_dir}; run `compare run` first"
            " or pass a run directory"
        )
    # Name breaks mtime ties so the choice is stable; run ids start with a UTC timestamp.
    return max(candidates, key=lambda d: ((d / RESULTS_FILE).stat().st_mtime_ns, d.name))


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
