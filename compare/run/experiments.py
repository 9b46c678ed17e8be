"""The experiment catalogue: built-in names or a user's files, validated before anything runs.

Every file is parsed by the bounded loader (compare.inputfile: as chaoslib's `load_experiment`
would by its extension, with no alias bomb or duplicate key) and validated as chaostoolkit
validates it, but without importing or running anything (`compare.run.validate`: chaoslib's
`ensure_experiment_is_valid` imports every Python activity's and control's module; here each
number is in its range too), then our `compare` extension block is read: the fault it
represents, the approaches it applies to, the target/field its evidence tracks and which method
activity is the injection. Any problem is one CompareError line naming the file and the field.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoslib import substitute

from compare import approaches as registry
from compare.chaos.fields import parse_path, read_path
from compare.chaos.shared import can_share
from compare.errors import CompareError, first_line
from compare.inputfile import parse_json, parse_yaml, read_text
from compare.judge.kinds import PART_KINDS
from compare.paths import EXPERIMENTS_DIR, REPO_ROOT
from compare.results import ExperimentInfo
from compare.run import shape
from compare.run.extension import check_injection, check_shape, find_extension, where
from compare.run.validate import check_experiment
from compare.run.workload import PARTS, Workload, needs_of
from compare.run.workload import unmet as unmet_by

# Run order of the built-in catalogue (the report lists faults in this order too).
CATALOGUE = (
    "pod-delete-one",
    "pod-delete-all",
    "deployment-scale-zero",
    "image-change",
    "resources-change",
    "probe-change",
    "probe-remove",
    "env-add",
    "label-change",
    "container-add",
    "container-command-add",
    "capability-add",
    "pod-host-network",
    "volume-add",
    "deployment-paused",
    "strategy-recreate",
    "min-ready-seconds",
    "deployment-label-add",
    "annotation-add",
    "rollout-restart",
    "pod-image-in-place",
    "service-port-change",
    "service-selector-change",
    "service-session-affinity",
    "service-label-remove",
    "deployment-delete",
    "service-delete",
    "replicaset-delete",
    "service-stuck-terminating",
    "service-recreated-headless",
    "service-foreign-endpointslice",
    # Faults on parts the built-in WebApp has not (a target's): skipped for it, with the reason.
    "statefulset-pod-delete",
    "configmap-data-change",
    "configmap-delete",
    "secret-data-change",
    "secret-delete",
    "rbac-binding-delete",
    "operator-down-drift",
    "operator-kill-drift",
    "apiserver-restart-drift",
    "etcd-restart-drift",
    "controller-manager-down",
)
# What an evidence's `target` may be: a kind of the app's parts (as a field-path root), its
# pods, the current ReplicaSet of a Deployment (every approach deploys these), or a part of an
# approach itself that the approach declares (`Approach.fault_targets`: `targets()`).
OBJECT_TARGETS = (*(name.lower() for name in PART_KINDS), "pod", "replicaset")
# What an exclusive experiment is exclusive of: the trials of its approach (it stops what that
# approach shares, e.g. the operator), or every trial of the run (it stops what the whole
# cluster shares, e.g. the API server).
SCOPES = ("approach", "cluster")
# What an experiment may require of the cluster; a run on a cluster without it leaves the
# experiment out, with the reason.
REQUIREMENTS = {
    "embedded-cluster": "it stops processes of the embedded cluster's control plane",
}
SUFFIXES = (".json", ".yaml", ".yml")
MAX_EXPERIMENT_BYTES = 1024 * 1024

# chaoslib logs validation chatter at INFO; without a handler Python would print warnings.
logging.getLogger("chaostoolkit").addHandler(logging.NullHandler())


# A fault on a pod-template label (its evidence field), e.g. `deployment.spec.template.metadata.
# labels[app.kubernetes.io/component]`: the label's key.
TEMPLATE_LABEL = re.compile(r"\.spec\.template\.metadata\.labels\[([^\]]+)\]$")


@dataclass(frozen=True)
class ExperimentSpec:
    """One validated experiment and what our extension block says about it."""

    name: str
    path: Path
    title: str
    fault: str
    approaches: tuple[str, ...]
    target: str | None
    field: str | None
    injection: str
    exclusive: bool
    builtin: bool
    document: dict[str, Any]
    scope: str = "approach"
    requires: tuple[str, ...] = ()
    # What its activities act on (`compare.run.workload`): `workload`, `service`, ...
    needs: tuple[str, ...] = ()
    # The kinds of those parts it applies to (`kinds` of its block; [] = each part's default).
    kinds: tuple[str, ...] = ()
    # A field the app's object must have for the fault to make sense (`requires-field`: a
    # probe to change or remove), `${key}` resolved with the app's parts.
    requires_field: str | None = None
    # Object shapes the injection cannot act on (`skip-when`: `compare.run.shape`).
    skip_when: tuple[Mapping[str, Any], ...] = ()
    # How `approaches` was chosen: derived (`""`), or the file's `approaches` or
    # `except-approaches` key (the reason a left-out approach is given).
    chosen_by: str = ""
    # In a run: the approaches of the run it has no trials for, each with the reason
    # (`compare.run.engine.runnable`: by design, or that approach's app lacks its part).
    skipped_for: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def cluster_wide(self) -> bool:
        """Exclusive of every trial of the run, not only of its approach's."""
        return self.exclusive and self.scope == "cluster"

    @property
    def shares_fault(self) -> bool:
        """A cluster-wide experiment whose approaches' trials run together through one
        injection (`compare.chaos.shared.can_share`); otherwise they run one at a time."""
        return self.cluster_wide and can_share(self.document)

    def unmet(
        self, *, embedded: bool, workload: Workload | None = None, own_operator: bool = True
    ) -> str | None:
        """Why this experiment cannot run on the cluster, or against the app whose parts are
        `workload` (None: it can). Without `own_operator` (a target's operator) a fault of
        the toolkit's own operator process acts on nothing of the app."""
        if "embedded-cluster" in self.requires and not embedded:
            return f"needs the embedded cluster ({REQUIREMENTS['embedded-cluster']})"
        # A part of an approach: the toolkit's own, not the one a target file installs.
        own_part = registry.fault_targets().get(str(self.target))
        if own_part is not None and not own_operator:
            return f"acts on {own_part}"
        if workload is None:
            return None
        unmet = unmet_by(self.needs, workload, self.kinds)
        values = {
            **configuration_defaults(self.document.get("configuration")),
            **workload.configuration(),
        }
        if unmet is None and self.requires_field and workload.objects:
            # A field the app's manifest lacks (a WebApp with its probes off) has nothing to change.
            path = str(_substituted(self.requires_field, values))
            if read_path(path, dict(workload.objects)) is None:
                return f"needs {path} ({workload.source} has none to change)"
        if unmet is None and workload.objects:
            # An object shape the injection cannot change (`compare.run.shape`).
            unmet = shape.refused(
                self.skip_when, workload.objects, workload.source
            ) or shape.unchanged(
                self.document,
                self.injection,
                _substituted(self.field, values),
                workload.objects,
                values,
                workload.source,
            )
        label = TEMPLATE_LABEL.search(str(_substituted(self.field, values) or ""))
        if unmet is None and label is not None and label.group(1) in workload.pod_selector:
            # The API server refuses a template whose labels no longer match the selector.
            return (
                f"changes the pod-template label {label.group(1)}, which the app's workload"
                " selects its pods by (the API server refuses that change)"
            )
        return unmet

    def not_for(self, approach: str) -> str:
        """Why this experiment does not apply to `approach` by design (it is not one of its
        `approaches`): what its file says, or the part of an approach it acts on."""
        if self.chosen_by == "approaches":
            return f"its file names only {', '.join(self.approaches)} (approaches)"
        if self.chosen_by == "except-approaches":
            return f"its file leaves {approach} out (except-approaches)"
        own = registry.fault_targets().get(str(self.target))
        if own is not None:
            having = " and ".join(registry.declaring(str(self.target)))
            return f"acts on a part of the {having} approach itself: {own}"
        return f"{approach} does not take this fault (its applies_to)"

    def evidence_for(self, configuration: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """The evidence's target and field with this trial's configuration values in place of
        `${key}` (a path naming the configured container, the workload's kind)."""
        return _substituted(self.target, configuration), _substituted(self.field, configuration)

    def info(self) -> ExperimentInfo:
        return ExperimentInfo(
            name=self.name,
            title=self.title,
            fault=self.fault,
            path=_display(self.path),
            approaches=list(self.approaches),
            builtin=self.builtin,
            skipped_for=dict(self.skipped_for) or None,
        )

    def fresh_document(self) -> dict[str, Any]:
        """A deep copy to run: chaoslib mutates the experiment it runs."""
        return copy.deepcopy(self.document)


def builtin_path(name: str) -> Path:
    return EXPERIMENTS_DIR / f"{name}.json"


def resolve(ref: str) -> tuple[str, Path, bool]:
    """A built-in name or a file path -> (name, path, builtin)."""
    if ref in CATALOGUE:
        return ref, builtin_path(ref), True
    path = Path(ref)
    if path.suffix in SUFFIXES or os.sep in ref or path.exists() or path.is_symlink():
        if not path.is_file():
            # The input reader names what is there instead (a directory, a FIFO, a device,
            # a symlink loop or to nothing, no such file).
            read_text(path, limit=MAX_EXPERIMENT_BYTES)
        builtin = path.resolve() == builtin_path(path.stem).resolve()
        return path.stem, path, builtin
    raise CompareError(
        f"experiment {ref!r}: not a built-in experiment (known: {', '.join(CATALOGUE)})"
        " and not a file"
    )


def load_experiments(refs: Sequence[str] = ()) -> list[ExperimentSpec]:
    """Load and validate every experiment (the whole catalogue when `refs` is empty)."""
    specs: list[ExperimentSpec] = []
    for ref in refs or CATALOGUE:
        spec = load_spec(ref)
        if any(s.name == spec.name for s in specs):
            raise CompareError(f"experiment {spec.name!r} is given twice")
        specs.append(spec)
    return specs


def load_spec(ref: str) -> ExperimentSpec:
    name, path, builtin = resolve(ref)
    document, ext = _load_valid(path)
    method = document.get("method") or []
    actions = [a.get("name") for a in method if isinstance(a, dict) and a.get("type") == "action"]
    injection = ext.get("injection", actions[0] if actions else None)
    if injection is None:
        raise CompareError(f"{path}: method: no action to inject")
    check_injection(method, str(injection), path)
    evidence = ext.get("evidence") or {}
    target, field = evidence.get("target"), evidence.get("field")
    # Checked with the file's own configuration defaults in place of `${key}`.
    defaults = configuration_defaults(document.get("configuration"))
    resolved_target = _substituted(target, defaults)
    if resolved_target not in (None, *targets()):
        raise CompareError(
            f"{path}: {where('evidence')}.target: {target!r} is not one of {', '.join(targets())}"
        )
    if field is not None:
        try:
            parse_path(str(_substituted(field, defaults)))
        except CompareError as exc:
            raise CompareError(f"{path}: {where('evidence')}.field: {exc}") from exc
    # Types are checked already (`compare.run.extension`); here the values.
    approaches = applicable(ext, path, resolved_target)
    exclusive, scope = _exclusivity(ext, path)
    requires = ext.get("requires", [])
    if any(r not in REQUIREMENTS for r in requires):
        raise CompareError(
            f"{path}: {where('requires')}: must be a list of {', '.join(REQUIREMENTS)}"
        )
    kinds = ext.get("kinds", [])
    if "kinds" in ext and not kinds:
        # `[]` would read as "each part's default kinds": leave the key out to mean that.
        raise CompareError(
            f"{path}: {where('kinds')}: must list at least one kind (leave it out for the"
            " default kinds of the parts it acts on)"
        )
    unknown = [k for k in kinds if k not in PART_KINDS]
    if unknown:
        raise CompareError(
            f"{path}: {where('kinds')}: unknown kind {unknown[0]!r}"
            f" (known: {', '.join(PART_KINDS)})"
        )
    needs = needs_of(document)
    for need in needs:
        if kinds and not any(k in PARTS[need].kinds for k in kinds):
            raise CompareError(
                f"{path}: {where('kinds')}: lists no kind of the {need} its activities act on"
                f" (one of {', '.join(PARTS[need].kinds)})"
            )
    required = ext.get("requires-field")
    if required is not None:
        try:
            parse_path(str(_substituted(required, defaults)))
        except CompareError as exc:
            raise CompareError(f"{path}: {where('requires-field')}: {exc}") from exc
    skip_when = ext.get("skip-when", [])
    problem = shape.check_rules(skip_when)
    if problem is not None:
        raise CompareError(f"{path}: {where('skip-when')}{problem}")
    title = str(document["title"])
    return ExperimentSpec(
        name=name,
        path=path,
        title=title,
        fault=str(ext.get("fault") or title),
        approaches=tuple(approaches),
        target=target,
        field=field,
        injection=str(injection),
        exclusive=exclusive,
        builtin=builtin,
        document=document,
        scope=scope,
        requires=tuple(requires),
        needs=needs,
        kinds=tuple(kinds),
        requires_field=required,
        skip_when=tuple(skip_when),
        chosen_by=next((k for k in ("approaches", "except-approaches") if k in ext), ""),
    )


def targets() -> tuple[str, ...]:
    """Every evidence target: the app's objects and pods, then the approaches' own parts."""
    return (*OBJECT_TARGETS, *registry.fault_targets())


def applicable(ext: Mapping[str, Any], path: Path, target: str | None = None) -> list[str]:
    """The approaches an experiment applies to, in registry order: every registered one (only
    those that declare its evidence `target` when it is a part of an approach: the operator's
    process), but those `except-approaches` names; or only those `approaches` names (an
    allow-list, taken as written). Both at once, an empty allow-list or result, or an unknown
    name is an error."""
    known = registry.names()
    if "approaches" in ext and "except-approaches" in ext:
        raise CompareError(
            f"{path}: {where('except-approaches')}: give either approaches (the only ones it"
            " applies to) or except-approaches (the ones it does not), not both"
        )
    key = "approaches" if "approaches" in ext else "except-approaches"
    named = list(ext.get(key, []))
    unknown = [a for a in named if a not in known]
    if unknown:
        raise CompareError(
            f"{path}: {where(key)}: unknown approach {unknown[0]!r} (known: {', '.join(known)})"
        )
    if key == "approaches":
        if not named:
            raise CompareError(f"{path}: {where('approaches')}: must be a non-empty list")
        return named
    # A fault on a part of an approach (its process) applies to those that have that part.
    having = (registry.declaring(target) if target is not None else ()) or known
    kept = [a for a in having if a not in named]
    if not kept:
        raise CompareError(f"{path}: {where('except-approaches')}: leaves no approach")
    return kept


def configuration_defaults(configuration: Any) -> dict[str, Any]:
    """An experiment's configuration values as `chaos run` resolves them without the
    environment: each env entry's default, each plain value as it is."""
    values: dict[str, Any] = {}
    for key, entry in (configuration or {}).items():
        values[key] = entry.get("default", "") if isinstance(entry, dict) else entry
    return values


def _substituted(text: str | None, values: Mapping[str, Any]) -> str | None:
    """`${key}` replaced as chaoslib replaces it in the activities' arguments."""
    if text is None:
        return None
    return str(substitute(text, dict(values), {}))


def _exclusivity(ext: dict[str, Any], path: Path) -> tuple[bool, str]:
    """`exclusive` and its `scope` (default `approach`); `scope: cluster` needs exclusive."""
    exclusive = bool(ext.get("exclusive", False))  # a boolean (checked by its type)
    scope = ext.get("scope", "approach")
    if scope not in SCOPES:
        raise CompareError(f"{path}: {where('scope')}: {scope!r} is not one of {', '.join(SCOPES)}")
    if scope == "cluster" and not exclusive:
        raise CompareError(f'{path}: {where("scope")}: cluster needs "exclusive": true')
    return exclusive, str(scope)


def _load_valid(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The experiment document, valid for chaostoolkit, and its checked `compare` block."""
    # Read (a regular UTF-8 file of bounded size) and parsed here, as chaoslib's
    # `load_experiment` would by the file's extension, but bounded: no alias bomb, no
    # duplicate key, no runaway nesting or number (compare.inputfile).
    text = read_text(path, limit=MAX_EXPERIMENT_BYTES)
    suffix = path.suffix.lower()
    if suffix == ".json":
        document = parse_json(text, str(path))
    elif suffix in (".yaml", ".yml"):
        document = parse_yaml(text, str(path))
    else:
        raise CompareError(f"{path}: only files with json, yaml or yml extensions are supported")
    if not isinstance(document, dict):
        raise CompareError(
            f"{path}: an experiment must be a mapping, got {type(document).__name__}"
        )
    # Strict, and before chaoslib, which expects `extensions` to be a list: unknown keys and
    # wrong types (`"exclusive": "false"`) are errors, never coerced.
    check_shape(document, path)
    ext = find_extension(document, path)
    try:
        check_experiment(document, path)  # imports nothing of the file's, runs nothing
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        # A shape chaoslib's validation did not expect, past `check_shape`: still one line.
        raise CompareError(f"{path}: not a valid experiment ({first_line(exc)})") from exc
    return document, ext


def _display(path: Path) -> str:
    """Relative to the repository when inside it (portable in results), else absolute."""
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(REPO_ROOT))
    except ValueError:
        return str(resolved)
