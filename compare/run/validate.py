"""An experiment checked as chaostoolkit would check it, without importing or running anything.

chaoslib's own `ensure_experiment_is_valid` imports the module of every Python activity and of
every control (the module's code runs), reads secrets from Vault and looks up processes:
validating a file would run code the file names. This check reads the document's structure
only. A control, and the module of a Python activity, is resolved when a trial runs the
experiment (chaoslib imports it then: running code is chaostoolkit's contract for `python` and
`process` activities and controls). The one exception are the toolkit's own activity modules
(`compare.chaos`, and chaosk8s, a dependency): their functions are looked up and the activity's
arguments bound to their signatures, which runs the toolkit's code, never the file's.

Every number has a documented range (docs: README, "What the toolkit refuses, and why"):
a `timeout` is finite, more than 0 and at most MAX_TIMEOUT_S; a pause finite, not negative and
at most MAX_PAUSE_S (a `${key}` pause with its configuration default, and again at run time
with the trial's values: `check_resolved_pauses`). Activity names are unique (the injection,
the deadlines and chaostoolkit's `ref` name activities), a tolerance regex is short and has no
nested quantifier (`(a+)+` takes exponential time on a near match). Each problem is one
CompareError line naming the file and the field.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from chaoslib import convert_to_type, substitute

from compare.errors import CompareError

# The longest an activity may be given (a control-plane restart takes well under a minute; a
# wait is the heal window, at most an hour).
MAX_TIMEOUT_S = 3600.0
# The longest pause before or after an activity (a wait belongs in a probe with a deadline).
MAX_PAUSE_S = 600.0
# A tolerance regex: at most this many characters, and no nested quantifier.
MAX_PATTERN_CHARS = 512
# Modules whose functions are checked against the arguments at validation: the toolkit's own
# extension and chaosk8s (a dependency of the toolkit). Nothing else is imported.
TRUSTED_MODULES = ("compare.chaos", "chaosk8s")

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VARIABLE = re.compile(r"^\$\{([^}]+)\}$")
_PROVIDERS = ("python", "process", "http")


def check_experiment(document: dict[str, Any], path: Path) -> None:
    """Raise CompareError (`<path>: <field>: <what is wrong>`) for the first problem."""
    try:
        _Checker(document).check()
    except _Problem as problem:
        raise CompareError(f"{path}: {problem.field}: {problem.message}") from None


def check_resolved_pauses(
    document: Mapping[str, Any], configuration: Mapping[str, Any], secrets: Any
) -> None:
    """The pauses as chaoslib is about to sleep them (with the trial's configuration and
    secrets): a number in range each, or CompareError naming the activity's field."""
    for at, activity in _activities(document):
        pauses = activity.get("pauses")
        if not isinstance(pauses, dict):
            continue
        resolved = substitute(pauses, dict(configuration), secrets)
        for key in ("before", "after"):
            value = resolved.get(key)
            if value is None:
                continue
            field = f"{at}.pauses.{key}"
            if not _is_number(value):
                raise CompareError(f"{field}: resolves to {value!r}, not a number of seconds")
            problem = _out_of_range(float(value), MAX_PAUSE_S, zero=True)
            if problem:
                raise CompareError(f"{field}: {problem}")


def nested_quantifier(pattern: str) -> bool:
    """Whether a repeated part of the regex holds another unbounded repeat (`(a+)+`, `(a*b?)*`,
    `(?:x|y+)+`): the shape whose backtracking grows exponentially with a near match."""
    from re import _parser  # type: ignore[attr-defined]  # the parser `re.compile` uses

    repeats = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}

    def walk(node: Any, inside: bool) -> bool:
        if isinstance(node, _parser.SubPattern | list):
            return any(walk(item, inside) for item in node)
        if isinstance(node, tuple) and len(node) == 2 and str(node[0]) in repeats:
            _low, high, body = node[1]
            unbounded = high > 1
            if unbounded and inside:
                return True
            return walk(body, inside or unbounded)
        if isinstance(node, tuple):
            return any(walk(item, inside) for item in node)
        return False

    return walk(_parser.parse(pattern), False)


class _Problem(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _activities(document: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every activity with the field path naming it, in chaostoolkit's order."""
    hypothesis = document.get("steady-state-hypothesis")
    if isinstance(hypothesis, dict):
        for i, probe in enumerate(hypothesis.get("probes") or []):
            if isinstance(probe, dict):
                yield f"steady-state-hypothesis.probes[{i}]", probe
    for key in ("method", "rollbacks"):
        for i, activity in enumerate(document.get(key) or []):
            if isinstance(activity, dict):
                yield f"{key}[{i}]", activity


class _Checker:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        configuration = document.get("configuration")
        self.configuration: dict[str, Any] = (
            configuration if isinstance(configuration, dict) else {}
        )

    def check(self) -> None:
        doc = self.document
        if not doc.get("title"):
            raise _Problem("title", "experiment requires a title")
        if not doc.get("description"):
            raise _Problem("description", "experiment requires a description")
        for i, tag in enumerate(doc.get("tags") or []):
            if not isinstance(tag, str) or not tag.strip():
                raise _Problem(f"tags[{i}]", "experiment tags must be non-empty strings")
        for i, extension in enumerate(doc.get("extensions") or []):
            if not str(extension.get("name") or "").strip():
                raise _Problem(f"extensions[{i}].name", "extensions require a non-empty name")
        self._configuration()
        self._secrets()
        hypothesis = doc.get("steady-state-hypothesis")
        if hypothesis is not None and not hypothesis.get("title"):
            raise _Problem("steady-state-hypothesis.title", "hypothesis requires a title")
        if doc.get("method") is None:
            raise _Problem(
                "method",
                "an experiment requires a method (it may be empty: [] checks the hypothesis only)",
            )
        for at, activity in _activities(doc):
            self._activity(at, activity)
            if at.startswith("steady-state-hypothesis"):
                self._tolerance(f"{at}.tolerance", activity)
        self._unique_names()
        named = {str(a.get("name")) for _, a in _activities(doc) if "ref" not in a}
        for at, activity in _activities(doc):
            ref = activity.get("ref")
            if ref is not None and ref not in named:
                raise _Problem(f"{at}.ref", f"no activity of the experiment is named {ref!r}")
        self._controls()

    def _configuration(self) -> None:
        for key, entry in self.configuration.items():
            if not isinstance(entry, dict) or "type" not in entry:
                continue
            at = f"configuration.{key}"
            kind = entry["type"]
            if kind == "env":
                env_key = entry.get("key")
                if not isinstance(env_key, str) or not env_key:
                    raise _Problem(f"{at}.key", "an env entry needs the variable's name")
                if "default" not in entry and env_key not in os.environ:
                    raise _Problem(at, f"no default, and the environment has no {env_key}")
                try:
                    self._default(key)
                except Exception as exc:
                    raise _Problem(
                        f"{at}.default", f"not a {entry.get('env_var_type')} ({exc})"
                    ) from None
            elif kind == "probe":
                # A dynamic configuration: a probe run when the experiment starts.
                self._activity(at, entry)

    def _secrets(self) -> None:
        for scope, entries in (self.document.get("secrets") or {}).items():
            if not isinstance(entries, dict):
                raise _Problem(f"secrets.{scope}", "must be an object of secrets")

    def _default(self, key: str) -> Any:
        """A configuration value as `chaos run` has it without the environment."""
        entry = self.configuration.get(key)
        if isinstance(entry, dict) and entry.get("type") == "env":
            value = entry.get("default")
            env_type = entry.get("env_var_type")
            if value is None or env_type is None:
                return value
            return convert_to_type(env_type, value)
        return entry

    def _activity(self, at: str, activity: dict[str, Any]) -> None:
        if not activity:
            raise _Problem(at, "an empty activity is no activity")
        if "ref" in activity:
            if not isinstance(activity["ref"], str) or not activity["ref"]:
                raise _Problem(f"{at}.ref", "must be a non-empty activity name")
            return
        kind = activity.get("type")
        if kind not in ("probe", "action"):
            raise _Problem(f"{at}.type", f"must be probe or action, got {kind!r}")
        name = activity.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _Problem(f"{at}.name", "an activity must have a non-empty name")
        provider = activity.get("provider")
        if not isinstance(provider, dict) or not provider:
            raise _Problem(f"{at}.provider", "an activity requires a provider")
        ptype = provider.get("type")
        if ptype not in _PROVIDERS:
            raise _Problem(f"{at}.provider.type", f"must be python, process or http, got {ptype!r}")
        if "timeout" in activity:
            self._timeout(f"{at}.timeout", activity["timeout"])
        if "timeout" in provider and ptype in ("process", "http"):
            self._timeout(f"{at}.provider.timeout", provider["timeout"], pair=ptype == "http")
        pauses = activity.get("pauses")
        if pauses is not None:
            if not isinstance(pauses, dict):
                raise _Problem(f"{at}.pauses", "must be an object {before, after}")
            for key, value in pauses.items():
                if key not in ("before", "after"):
                    raise _Problem(f"{at}.pauses.{key}", "unknown key (known: before, after)")
                self._pause(f"{at}.pauses.{key}", value)
        if "background" in activity and not isinstance(activity["background"], bool):
            raise _Problem(f"{at}.background", "must be true or false")
        if ptype == "python":
            self._python(f"{at}.provider", provider)
        elif ptype == "process":
            path = provider.get("path")
            if not isinstance(path, str) or not path:
                raise _Problem(f"{at}.provider.path", "a process activity must have a path")
            # Where the executable is, no more: it does not run.
            if shutil.which(os.path.expanduser(path)) is None:
                raise _Problem(f"{at}.provider.path", f"{path!r} cannot be found")
            arguments = provider.get("arguments")
            if arguments is not None and not isinstance(arguments, str | list | dict):
                raise _Problem(f"{at}.provider.arguments", "must be a string, list or object")
        else:
            url = provider.get("url")
            if not isinstance(url, str) or not url:
                raise _Problem(f"{at}.provider.url", "an HTTP activity must have a URL")
            headers = provider.get("headers")
            if headers is not None and not isinstance(headers, dict):
                raise _Problem(f"{at}.provider.headers", "must be an object")

    def _python(self, at: str, provider: dict[str, Any]) -> None:
        module, func = provider.get("module"), provider.get("func")
        if not isinstance(module, str) or not _DOTTED.match(module):
            raise _Problem(f"{at}.module", "a Python activity must name a module (a.dotted.path)")
        if not isinstance(func, str) or not _IDENTIFIER.match(func):
            raise _Problem(f"{at}.func", "a Python activity must name a function")
        arguments = provider.get("arguments", {})
        if not isinstance(arguments, dict):
            raise _Problem(f"{at}.arguments", "must be an object of named arguments")
        trusted = any(module == m or module.startswith(f"{m}.") for m in TRUSTED_MODULES)
        if not trusted:
            return  # resolved by chaoslib when the trial runs it, never here
        try:
            found = importlib.import_module(module)
        except ImportError:
            raise _Problem(f"{at}.module", f"the toolkit has no module {module!r}") from None
        function = getattr(found, func, None)
        if not (inspect.isfunction(function) or inspect.isbuiltin(function)):
            raise _Problem(
                f"{at}.func", f"the module {module} does not expose a function called {func!r}"
            )
        signature = inspect.signature(function)
        given = dict(arguments)
        for injected in ("configuration", "secrets"):
            if injected in signature.parameters:
                given[injected] = None
        try:
            signature.bind(**given)
        except TypeError as exc:
            text = str(exc)
            unexpected = re.search(r"unexpected keyword argument '([^']+)'", text)
            if unexpected:
                raise _Problem(
                    f"{at}.arguments",
                    f"argument {unexpected.group(1)!r} is not part of the function signature"
                    f" of {module}.{func}",
                ) from None
            raise _Problem(f"{at}.arguments", f"{module}.{func}: {text}") from None

    def _tolerance(self, at: str, probe: dict[str, Any]) -> None:
        if "ref" in probe:
            return
        if "tolerance" not in probe:
            raise _Problem(at, "a hypothesis probe must have a tolerance")
        tolerance = probe["tolerance"]
        if not isinstance(tolerance, bool | int | list | str | dict):
            raise _Problem(at, "must be a boolean, an integer, a string, a list or an object")
        if isinstance(tolerance, list):
            for i, value in enumerate(tolerance):
                if isinstance(value, float) and not math.isfinite(value):
                    raise _Problem(f"{at}[{i}]", "must be a finite number")
        if not isinstance(tolerance, dict):
            return
        kind = tolerance.get("type")
        if kind == "probe":
            self._activity(at, tolerance)
        elif kind == "regex":
            self._regex(f"{at}.pattern", tolerance.get("pattern"))
        elif kind == "jsonpath":
            path = tolerance.get("path")
            if not isinstance(path, str) or not path.strip():
                raise _Problem(f"{at}.path", "a jsonpath tolerance needs a non-empty path")
        elif kind == "range":
            bounds = tolerance.get("range")
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not all(_is_number(b) and math.isfinite(b) for b in bounds)
            ):
                raise _Problem(f"{at}.range", "must be two finite numbers [low, high]")
            if bounds[0] > bounds[1]:
                raise _Problem(f"{at}.range", f"{bounds[0]} is above {bounds[1]}")
        else:
            raise _Problem(f"{at}.type", f"{kind!r} is not one of probe, regex, jsonpath, range")

    def _regex(self, at: str, pattern: Any) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise _Problem(at, "a regex tolerance needs a non-empty pattern (a string)")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise _Problem(at, f"longer than {MAX_PATTERN_CHARS} characters ({len(pattern)})")
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            raise _Problem(at, f"not a valid regex ({exc})") from None
        if nested_quantifier(pattern):
            raise _Problem(
                at,
                f"{pattern!r} repeats a part that repeats (a nested quantifier such as (a+)+"
                " takes exponential time to fail a match); write it without the nesting",
            )

    def _timeout(self, at: str, value: Any, *, pair: bool = False) -> None:
        values = value if pair and isinstance(value, list) and len(value) == 2 else [value]
        for item in values:
            if not _is_number(item):
                raise _Problem(at, f"must be a number of seconds, got {item!r}")
            problem = _out_of_range(float(item), MAX_TIMEOUT_S, zero=False)
            if problem:
                raise _Problem(at, problem)

    def _pause(self, at: str, value: Any) -> None:
        shown = value
        if isinstance(value, str):
            match = _VARIABLE.match(value)
            if match is None:
                raise _Problem(at, "must be a number of seconds or a ${key} of the configuration")
            key = match.group(1)
            if key not in self.configuration:
                # A secret may hold it; then only the run-time check sees its value.
                if any(key in (s or {}) for s in (self.document.get("secrets") or {}).values()):
                    return
                raise _Problem(at, f"{value} names no configuration key")
            value = self._default(key)
            if value is None:
                return  # set from the environment at run time (checked then)
            shown = f"{shown} ({value!r})"
        if not _is_number(value):
            raise _Problem(at, f"must be a number of seconds, got {shown!r}")
        problem = _out_of_range(float(value), MAX_PAUSE_S, zero=True)
        if problem:
            raise _Problem(at, problem)

    def _unique_names(self) -> None:
        """No two activities share a name where a name picks one: the hypothesis's probes and
        the method (`ref`, the injection, the deadlines), and the rollbacks among themselves."""
        groups: dict[str, dict[str, str]] = {"": {}, "rollbacks": {}}
        for at, activity in _activities(self.document):
            if "ref" in activity:
                continue
            group = groups["rollbacks" if at.startswith("rollbacks") else ""]
            name = str(activity.get("name"))
            if name in group:
                raise _Problem(f"{at}.name", f"{name!r} is the name of {group[name]} too")
            group[name] = at

    def _controls(self) -> None:
        found: list[tuple[str, Any]] = []
        for key, owner in (
            ("controls", self.document),
            ("steady-state-hypothesis.controls", self.document.get("steady-state-hypothesis")),
        ):
            found += self._listed(key, owner)
        for at, activity in _activities(self.document):
            found += self._listed(f"{at}.controls", activity)
        names = {c.get("name") for _, c in found if isinstance(c, dict) and "ref" not in c}
        for at, control in found:
            if not isinstance(control, dict):
                raise _Problem(at, "a control must be an object")
            if "ref" in control:
                if control["ref"] not in names:
                    raise _Problem(f"{at}.ref", f"no control is named {control['ref']!r}")
                continue
            name = control.get("name")
            if not isinstance(name, str) or not name.strip():
                raise _Problem(f"{at}.name", "a control must have a non-empty name")
            scope = control.get("scope")
            if scope is not None and scope not in ("before", "after"):
                raise _Problem(f"{at}.scope", f"must be before or after, got {scope!r}")
            provider = control.get("provider")
            if not isinstance(provider, dict):
                raise _Problem(f"{at}.provider", "a control must have a provider (an object)")
            if provider.get("type") != "python":
                raise _Problem(f"{at}.provider.type", "must be python")
            module = provider.get("module")
            if not isinstance(module, str) or not _DOTTED.match(module):
                raise _Problem(f"{at}.provider.module", "must name a module (a.dotted.path)")
            # Never imported here: chaoslib loads a control when the trial starts.

    @staticmethod
    def _listed(at: str, owner: Any) -> list[tuple[str, Any]]:
        if not isinstance(owner, dict) or "controls" not in owner:
            return []
        controls = owner["controls"]
        if not isinstance(controls, list):
            raise _Problem(at, "must be a list of controls")
        return [(f"{at}[{i}]", c) for i, c in enumerate(controls)]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _out_of_range(value: float, maximum: float, *, zero: bool) -> str | None:
    if not math.isfinite(value):
        return f"{value} is not a finite number of seconds"
    if value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "more than 0"
        return f"{value:g} s is out of range (must be {least} and at most {maximum:g} s)"
    if value > maximum:
        return f"{value:g} s is more than the maximum of {maximum:g} s"
    return None
