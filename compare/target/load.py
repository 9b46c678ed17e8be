"""Loading a target file: the model checked, its paths resolved, every file it names read.

Everything is read before anything is deployed, so a bad target file is one CompareError line
naming the file and the field (`compare.yaml: <arm>.valuesFiles[1]: ...`). The result is a
`Target` whose paths are absolute and whose values are merged, as the deployers consume them.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Never

from pydantic import ValidationError

from compare.errors import CompareError
from compare.inputfile import check_plain, load_yaml, parse_yaml_all, read_text
from compare.target.model import (
    RELEASE_MAX,
    ArmKey,
    ChartArm,
    ChartSource,
    HelmSpec,
    OperatorChart,
    OperatorProcess,
    OperatorSpec,
    TargetFile,
    target_file_model,
)
from compare.webapp import API_GROUP, API_VERSION, KIND, WebApp
from compare.webapp.load import format_validation_error, parse_webapp

# The condition the toolkit's operator sets on a WebApp once its children are ready.
READY_CONDITION = "Available"

# A target file and each values or resource file it names is a few KiB.
MAX_TARGET_BYTES = 1024 * 1024

# A chart arm's keys that leave objects of the chart out of its install and desired state,
# each for one kind of object its pods would have to serve (`compare.deploy.code_pods`).
DROP_WEBHOOKS = "dropUnservedWebhooks"
DROP_API_SERVICES = "dropUnservedAPIServices"


@dataclass(frozen=True)
class Chart:
    """A chart source with its local path resolved (`path` form) or its remote reference."""

    form: Literal["path", "repo", "oci"]
    path: Path | None = None
    repo: str | None = None
    name: str | None = None
    version: str | None = None
    oci: str | None = None

    def describe(self) -> str:
        if self.form == "path":
            return str(self.path)
        if self.form == "repo":
            return f"{self.name} {self.version} from {self.repo}"
        return f"{self.oci}" + (f" {self.version}" if self.version else "")


@dataclass(frozen=True)
class HelmInstall:
    """A chart to install as a release, with its values merged (files in order, then inline)."""

    where: str  # the field that gave it: an arm's key, or `<key>.install.chart` (an operator's)
    chart: Chart
    release: str
    values: Mapping[str, Any]
    namespace: str | None = None
    # `dropUnservedWebhooks`: the chart's fail-closed webhook configurations served by its
    # own pods left out of the install and the desired state (`compare.deploy.code_pods`).
    drop_unserved_webhooks: bool = False
    # `dropUnservedAPIServices`: likewise the chart's APIServices served by its own pods.
    drop_unserved_api_services: bool = False
    # `disableHooks`: the chart's Helm hooks never run (helm --no-hooks, the HelmRelease's
    # disableHooks), so never created (`compare.deploy.code_pods`).
    disable_hooks: bool = False

    @property
    def drops(self) -> tuple[str, ...]:
        """The arm's keys set that leave objects of the chart out (`DROP_WEBHOOKS`,
        `DROP_API_SERVICES`), in that order."""
        switches = (
            (DROP_WEBHOOKS, self.drop_unserved_webhooks),
            (DROP_API_SERVICES, self.drop_unserved_api_services),
        )
        return tuple(key for key, on in switches if on)


@dataclass(frozen=True)
class OperatorCommand:
    """An operator the toolkit runs as a local process (`install.process`), resolved: the
    command (a first word `python` replaced by the toolkit's interpreter, a relative path by
    the absolute one), its extra environment, the directory it runs in, and the manifests
    applied before it starts (read when the file is loaded)."""

    command: tuple[str, ...]
    env: Mapping[str, str]
    working_dir: Path
    manifests: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class OperatorInstall:
    form: Literal["kustomize", "chart", "process", "alreadyInstalled", "toolkit"]
    kustomize: Path | None = None
    chart: HelmInstall | None = None
    process: OperatorCommand | None = None


@dataclass(frozen=True)
class Operator:
    install: OperatorInstall
    resources: tuple[Mapping[str, Any], ...]
    ready_condition: str | None  # None: ready when its children are
    # The resources as WebApps (the `toolkit` form, whose resources are all WebApps).
    webapps: tuple[WebApp, ...] = ()
    # The field managers the target file names as the operator's (`fieldManagers`).
    field_managers: tuple[str, ...] = ()
    # Consent to delete an owned object holding another manager's content, for the operator to
    # re-create it, when the baseline is taken (`reclaimForeign`).
    reclaim_foreign: bool = False

    @property
    def toolkit(self) -> bool:
        """The toolkit's own operator: its desired state is the built-in chart's rendering of
        each WebApp (`compare.approaches.operator.reference`), not a baseline."""
        return self.install.form == "toolkit"


@dataclass(frozen=True)
class Target:
    """A loaded target file (absolute paths, merged values, resources read)."""

    source: Path
    name: str
    namespace: str | None
    # Its arms by the name of the approach each is for, in the order of the keys declared
    # (`ArmKey`): the ones it gives.
    arms: Mapping[str, HelmInstall | Operator] = field(default_factory=dict)
    spec: TargetFile | None = field(default=None, compare=False)
    # Its chart arms are the toolkit's own chart with a checked WebApp's values (the built-in
    # WebApp): they render, the same every time and in every namespace, so an install checks
    # nothing first and what it installs is the rendering.
    # That chart makes nothing outside its namespace: a trial's release keeps the arm's name
    # (`for_trial`) and two trials share nothing.
    own_chart: bool = False
    # Whether it is a target file's (else the built-in target's, `builtin_target`). A file's
    # arms are deployed once before any trial (a preflight: its chart may never reach its
    # desired state, what its operator's resources own is known only once they own it), a run
    # without `--approach` takes every arm it names, and results.json names the file. The
    # built-in target's chart and operator are the toolkit's own with a checked WebApp: no
    # preflight (nothing to learn, nothing installed a second cluster would lack), the
    # registry's default approaches (it has an arm for every approach), no file to name.
    # `app_spec`: the spec results.json records (a file's values stay in the file: they may
    # hold credentials).
    from_file: bool = True
    app_spec: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # The parts the faults act on, as the file names them (`parts`: `workload`, `service`);
    # absent, the rule of `compare.judge.parts` decides.
    parts: Mapping[str, str] = field(default_factory=dict)

    def arm(self, name: str) -> HelmInstall | Operator:
        """The arm of approach `name`; a one-line error naming the key when it has none."""
        found = self.arms.get(name)
        return self._absent(name) if found is None else found

    def chart_arm(self, name: str) -> HelmInstall:
        """`arm`, a chart (a key of another kind is not given either)."""
        found = self.arms.get(name)
        return found if isinstance(found, HelmInstall) else self._absent(name)

    def operator_arm(self, name: str) -> Operator:
        """`arm`, an operator (a key of another kind is not given either)."""
        found = self.arms.get(name)
        return found if isinstance(found, Operator) else self._absent(name)

    def _absent(self, name: str) -> Never:
        raise CompareError(f"{self.source}: {name}: not given (this target has no {name} key)")

    @property
    def webapps(self) -> tuple[WebApp, ...]:
        """The WebApps of its operator arms whose operator is the toolkit's (`toolkit`)."""
        arms = self.arms.values()
        return tuple(w for arm in arms if isinstance(arm, Operator) for w in arm.webapps)

    @property
    def resource_kinds(self) -> tuple[str, ...]:
        """The kinds of the custom resources its operator arms apply, each once, in order
        (`WebApp` for the built-in target; none for a target of charts alone)."""
        kinds = [
            str(r.get("kind"))
            for arm in self.arms.values()
            if isinstance(arm, Operator)
            for r in arm.resources
        ]
        return tuple(dict.fromkeys(kinds))

    def for_trial(self, namespace: str) -> Target:
        """The target as a trial in `namespace` deploys it: every chart arm under a release
        name of its own for that namespace (`release_in`); what `compare deploy --target`
        installs keeps the file's names. The toolkit's own chart (`own_chart`) keeps them in
        every namespace too: it makes nothing cluster-scoped for two releases to contend for."""
        if self.own_chart:
            return self
        arms = {
            name: release_in(arm, namespace) if isinstance(arm, HelmInstall) else arm
            for name, arm in self.arms.items()
        }
        return replace(self, arms=arms)

    def part_names(
        self, arm: str | None = None, namespace: str | None = None
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The spellings of the workload and the Service the file names (`parts`; empty: not
        named), for `compare.judge.parts.main_parts`, tried in order: for chart arm `arm`
        (as a trial in `namespace` deploys it: `for_trial`), first with that arm's release
        name in place of the chart arm release the name holds (the longest: each arm, and
        each trial, has a release of its own), then as written."""
        if arm is None:
            own = None
        else:
            own = (self.for_trial(namespace) if namespace else self).arms.get(arm)
        releases = sorted(
            {a.release for a in self.arms.values() if isinstance(a, HelmInstall)},
            key=len,
            reverse=True,
        )

        def spellings(key: str) -> tuple[str, ...]:
            name = self.parts.get(key)
            if name is None:
                return ()
            kind, slash, bare = name.rpartition("/")
            held = next((r for r in releases if r in bare), None)
            if not isinstance(own, HelmInstall) or held is None:
                return (name,)
            renamed = f"{kind}{slash}{bare.replace(held, own.release, 1)}"
            return tuple(dict.fromkeys((renamed, name)))

        return spellings("workload"), spellings("service")


def release_in(install: HelmInstall, namespace: str) -> HelmInstall:
    """The install under a release name of its own for `namespace` (the same every time).

    `compare run` installs the target once per trial namespace, in parallel: a chart's
    cluster-scoped objects (ClusterRoles, webhook configurations) are named after the release,
    so one release name for every trial would make the second install fail."""
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:8]
    head = install.release[: RELEASE_MAX - len(digest) - 1].rstrip("-")
    return replace(install, release=f"{head}-{digest}")


def load_target(path: Path, *, arms: Sequence[ArmKey]) -> Target:
    """Read, validate and resolve a target file whose keys are `arms` (the registry's:
    `compare.approaches.load_target`); one-line CompareError on any problem."""
    data = load_yaml(path, limit=MAX_TARGET_BYTES)
    check_plain(data, str(path))  # values and objects go to Helm and the API server as JSON
    return parse_target(data, path, arms=arms)


def parse_target(data: Any, path: Path, *, arms: Sequence[ArmKey]) -> Target:
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a Target mapping, got {type(data).__name__}")
    try:
        spec: TargetFile = target_file_model(arms).model_validate(data)
    except ValidationError as exc:
        raise CompareError(f"{path}: {format_validation_error(exc)}") from None
    base = path.resolve().parent
    loaded: dict[str, HelmInstall | Operator] = {}
    for key in arms:
        given = getattr(spec, key.name)
        if isinstance(given, OperatorSpec):
            loaded[key.name] = _operator(path, base, key.name, given, spec.name)
        elif isinstance(given, HelmSpec):
            loaded[key.name] = _chart_install(path, base, key.name, given, spec.name)
    parts = {} if spec.parts is None else spec.parts.model_dump(exclude_none=True)
    return Target(
        source=path, name=spec.name, namespace=spec.namespace, arms=loaded, spec=spec, parts=parts
    )


def _chart_install(path: Path, base: Path, where: str, spec: HelmSpec, name: str) -> HelmInstall:
    values: dict[str, Any] = {}
    for index, file in enumerate(spec.values_files):
        at = f"{where}.valuesFiles[{index}]"
        found = _file(path, base, file, at)
        data = _read_yaml(path, found, at)
        if data is None:
            continue
        if not isinstance(data, dict):
            raise CompareError(
                f"{path}: {at}: {file} holds {type(data).__name__}, not a mapping of values"
            )
        values = merge_values(values, data)
    values = merge_values(values, spec.values)
    return HelmInstall(
        where=where,
        chart=_chart(path, base, f"{where}.chart", spec.chart),
        release=spec.release or name,
        values=values,
        namespace=spec.namespace if isinstance(spec, OperatorChart) else None,
        drop_unserved_webhooks=isinstance(spec, ChartArm) and spec.drop_unserved_webhooks,
        drop_unserved_api_services=isinstance(spec, ChartArm) and spec.drop_unserved_api_services,
        disable_hooks=isinstance(spec, ChartArm) and spec.disable_hooks,
    )


def _chart(path: Path, base: Path, where: str, source: ChartSource) -> Chart:
    if source.path is None:
        return Chart(
            source.form,
            repo=source.repo,
            name=source.name,
            version=source.version,
            oci=source.oci,
        )
    directory = base / source.path
    if not directory.is_dir():
        raise CompareError(f"{path}: {where}.path: {source.path} is not a directory")
    if not (directory / "Chart.yaml").is_file():
        raise CompareError(f"{path}: {where}.path: {source.path} holds no Chart.yaml")
    return Chart("path", path=directory.resolve())


def _operator(path: Path, base: Path, where: str, spec: OperatorSpec, name: str) -> Operator:
    given = spec.install
    install: OperatorInstall
    if given.kustomize is not None:
        directory = base / given.kustomize
        at = f"{where}.install.kustomize"
        if not directory.is_dir():
            raise CompareError(f"{path}: {at}: {given.kustomize} is not a directory")
        if not any((directory / f).is_file() for f in KUSTOMIZATION_FILES):
            raise CompareError(f"{path}: {at}: {given.kustomize} holds no kustomization.yaml")
        install = OperatorInstall("kustomize", kustomize=directory.resolve())
    elif given.chart is not None:
        install = OperatorInstall(
            "chart", chart=_chart_install(path, base, f"{where}.install.chart", given.chart, name)
        )
    elif given.process is not None:
        install = OperatorInstall(
            "process", process=_process(path, base, f"{where}.install.process", given.process)
        )
    elif given.toolkit:
        install = OperatorInstall("toolkit")
    else:
        install = OperatorInstall("alreadyInstalled")
    resources: list[Mapping[str, Any]] = []
    webapps: list[WebApp] = []
    for index, item in enumerate(spec.resources):
        at = f"{where}.resources[{index}]"
        if isinstance(item, str):
            found = _file(path, base, item, at)
            objects = _read_documents(path, found, at)
        else:
            objects = [item]
        for obj in objects:
            _check_object(path, at, obj)
            resources.append(copy.deepcopy(obj))
            if install.form == "toolkit":
                webapps.append(_webapp(path, at, obj))
    # No `ready` exactly with install.toolkit (the model's rule): a WebApp is ready when Available.
    ready = READY_CONDITION if spec.ready is None else spec.ready.condition
    return Operator(
        install,
        tuple(resources),
        ready,
        tuple(webapps),
        field_managers=tuple(dict.fromkeys(spec.field_managers)),
        reclaim_foreign=spec.reclaim_foreign,
    )


# The first word of a process's command that names the interpreter running the toolkit: an
# operator written in Python runs with the toolkit's virtualenv (where `pipx inject` or `pip
# install` put its dependencies), whatever `python` on PATH is.
PYTHON = "python"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _process(path: Path, base: Path, at: str, given: OperatorProcess) -> OperatorCommand:
    """The command resolved and checked (its directory, its program, its manifests read)."""
    directory = base / given.working_dir if given.working_dir is not None else base
    if not directory.is_dir():
        raise CompareError(f"{path}: {at}.workingDir: {given.working_dir} is not a directory")
    program, *args = given.command
    if program == PYTHON:
        program = sys.executable
    elif "/" in program:
        found = directory / program
        if not found.is_file() or not os.access(found, os.X_OK):
            raise CompareError(
                f"{path}: {at}.command[0]: {program}: no executable file (relative to {directory})"
            )
        program = str(found.resolve())
    elif shutil.which(program) is None:
        raise CompareError(f"{path}: {at}.command[0]: {program}: not found on PATH")
    manifests: list[Mapping[str, Any]] = []
    for index, name in enumerate(given.crds):
        where = f"{at}.crds[{index}]"
        found = base / name
        if found.is_dir():
            files = sorted(f for f in found.iterdir() if f.suffix in MANIFEST_SUFFIXES)
            if not files:
                raise CompareError(f"{path}: {where}: {name} holds no *.yaml, *.yml or *.json")
        elif found.is_file():
            files = [found]
        else:
            raise CompareError(f"{path}: {where}: {name}: no such file or directory")
        for file in files:
            for obj in _read_documents(path, file, where):
                _check_object(path, where, obj)
                manifests.append(copy.deepcopy(obj))
    return OperatorCommand(
        command=(program, *args),
        env=dict(given.env),
        working_dir=directory.resolve(),
        manifests=tuple(manifests),
    )


def _webapp(path: Path, at: str, obj: Mapping[str, Any]) -> WebApp:
    """A resource of the toolkit's operator: a WebApp, valid as the built-in one is."""
    if obj.get("apiVersion") != f"{API_GROUP}/{API_VERSION}" or obj.get("kind") != KIND:
        raise CompareError(
            f"{path}: {at}: install.toolkit takes {KIND} ({API_GROUP}/{API_VERSION}) resources,"
            f" not {obj.get('kind')} ({obj.get('apiVersion')})"
        )
    return parse_webapp(dict(obj), source=f"{path}: {at}")


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _file(path: Path, base: Path, name: str, at: str) -> Path:
    found = base / name
    if not found.exists():
        raise CompareError(f"{path}: {at}: {name}: no such file")
    if not found.is_file():
        raise CompareError(f"{path}: {at}: {name} is not a file")
    return found


def _read_yaml(path: Path, file: Path, at: str) -> Any:
    try:
        data = load_yaml(file, limit=MAX_TARGET_BYTES)
        check_plain(data, str(file))
        return data
    except CompareError as exc:
        raise CompareError(f"{path}: {at}: {exc.message}") from None


def _read_documents(path: Path, file: Path, at: str) -> list[Any]:
    """Every document of a resource file (`---` separates several objects)."""
    try:
        text = read_text(file, limit=MAX_TARGET_BYTES)
        documents = [doc for doc in parse_yaml_all(text, str(file)) if doc is not None]
        check_plain(documents, str(file))
    except CompareError as exc:
        raise CompareError(f"{path}: {at}: {exc.message}") from None
    if not documents:
        raise CompareError(f"{path}: {at}: {file}: holds no object")
    return documents


def _check_object(path: Path, at: str, obj: Any) -> None:
    if not isinstance(obj, dict):
        raise CompareError(f"{path}: {at}: expected a Kubernetes object, got {type(obj).__name__}")
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise CompareError(f"{path}: {at}: the object has no {key}")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise CompareError(f"{path}: {at}: the {obj['kind']} has no metadata.name")


def merge_values(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of values: maps merge key by key, null removes a key, anything else
    is replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
