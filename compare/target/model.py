"""The target file as written: strict pydantic models (its JSON schema is generated from them).

A target file names an app under test and how each approach deploys it. Paths in it are
relative to the file itself; `compare.target.load` resolves and checks them. Every mapping
refuses unknown keys and every value has its exact type (`replicas: "3"` is never coerced),
as the WebApp model does.

Which approaches there are is not known here: each top-level key of an arm is declared by the
approach it is named after (an `ArmKey`: its name, the kind of arm, a chart or an operator,
and its description), and the registry (`compare.approaches`) hands them in; the model of a
file with those keys is `target_file_model(arms)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from compare.judge.kinds import WORKLOAD_KINDS
from compare.kube.namespace import DNS_LABEL

API_VERSION = "compare.example.com/v1alpha1"
KIND = "Target"

# Names the file gives objects and releases: DNS labels (a release name's cap is 53).
RELEASE_MAX = 53
NAMESPACE_MAX = 63
# A condition type as Kubernetes writes them (`Available`, `example.com/Ready`).
CONDITION_TYPE = r"^([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$"
# An object's name as the API server takes it (a DNS subdomain), and a workload given as
# `Kind/name` or `name`.
OBJECT_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
WORKLOAD_REF = rf"^(({'|'.join(WORKLOAD_KINDS)})/)?{OBJECT_NAME}$"
OCI_REFERENCE = re.compile(r"^oci://[^\s/]+(/[^\s/]+)+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


def _one_of(model: BaseModel, groups: dict[str, tuple[str, ...]]) -> str:
    """The one form a model is given in: exactly one group of fields set, all of that group."""
    set_fields = {name for name in type(model).model_fields if getattr(model, name) is not None}
    chosen = [form for form, fields in groups.items() if fields[0] in set_fields]
    forms = " | ".join(groups)
    if len(chosen) != 1:
        given = ", ".join(sorted(chosen)) or "none"
        raise ValueError(f"give exactly one of {forms} (given: {given})")
    form = chosen[0]
    missing = [name for name in groups[form] if name not in set_fields]
    if missing:
        raise ValueError(f"{form} needs {' and '.join(missing)} too")
    others = set_fields - set(groups[form]) - {"version"}
    for other, fields in groups.items():
        if other != form and others & set(fields):
            raise ValueError(f"{sorted(others & set(fields))[0]} is not part of {form}")
    return form


class ChartSource(_Strict):
    """Where a chart comes from: a local directory, a chart repository, or an OCI reference."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["path"]},
                {"required": ["repo", "name", "version"]},
                {"required": ["oci"]},
            ]
        }
    )

    path: str | None = Field(
        default=None, min_length=1, description="A chart directory, relative to the target file."
    )
    repo: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="A chart repository URL (with name and version).",
    )
    name: str | None = Field(
        default=None, min_length=1, description="The chart's name in the repository."
    )
    version: str | None = Field(
        default=None, min_length=1, description="The chart version (repository or OCI)."
    )
    oci: str | None = Field(
        default=None,
        pattern=OCI_REFERENCE.pattern,
        description="An OCI chart reference, oci://registry/path/chart.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        _one_of(
            self,
            {"path": ("path",), "repo": ("repo", "name", "version"), "oci": ("oci",)},
        )
        if self.version is not None and self.path is not None:
            raise ValueError("version is not part of path (a directory has one version)")
        return self

    @property
    def form(self) -> Literal["path", "repo", "oci"]:
        if self.path is not None:
            return "path"
        return "repo" if self.repo is not None else "oci"


class HelmSpec(_Strict):
    """A chart, its values and the release name it is installed under."""

    chart: ChartSource
    release: str | None = Field(
        default=None,
        pattern=DNS_LABEL,
        max_length=RELEASE_MAX,
        description="The release name (default: the target's name).",
    )
    values_files: list[str] = Field(
        default_factory=list,
        alias="valuesFiles",
        description="Values files, relative to the target file; later ones win.",
    )
    values: dict[str, Any] = Field(
        default_factory=dict, description="Inline values; they win over every values file."
    )


class ChartArm(HelmSpec):
    """A chart arm of an approach: the chart, and what the toolkit may leave out of it."""

    drop_unserved_webhooks: bool = Field(
        default=False,
        alias="dropUnservedWebhooks",
        description="Leave out of the install and the desired state the chart's admission"
        " webhook configurations that fail closed and are served by the chart's own pods"
        " (on the embedded cluster no pod runs code: they would refuse every request they"
        " match). The helm and flux arms (a post-render filter); the argocd arm refuses it.",
    )
    drop_unserved_api_services: bool = Field(
        default=False,
        alias="dropUnservedAPIServices",
        description="Leave out of the install and the desired state the chart's APIServices"
        " served by the chart's own pods (on the embedded cluster no pod runs code: such an"
        " APIService is never Available, and an unavailable one breaks API discovery of its"
        " group for the whole cluster). The helm and flux arms (a post-render filter); the"
        " argocd arm refuses it.",
    )
    disable_hooks: bool = Field(
        default=False,
        alias="disableHooks",
        description="Never run the chart's Helm hooks (install, upgrade, rollback and delete"
        " hooks: their Jobs and Pods are not created; on the embedded cluster no pod runs code,"
        " so they would do nothing, and a hook Pod never completes). The helm arm (helm"
        " --no-hooks) and the flux arm (the HelmRelease's disableHooks); the argocd arm refuses"
        " it.",
    )


class OperatorChart(HelmSpec):
    """The operator's own chart, installed as a release."""

    namespace: str | None = Field(
        default=None,
        pattern=DNS_LABEL,
        max_length=NAMESPACE_MAX,
        description="The operator's namespace (default: the target's namespace).",
    )


class OperatorProcess(_Strict):
    """The operator run as a local process by the toolkit, as its authors' `make run` does:
    its command, started against the cluster (KUBECONFIG set to a kubeconfig the toolkit
    writes), supervised, and stopped when its install is removed."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1,
        description="The command and its arguments. A first word `python` is the interpreter"
        " running the toolkit (its virtualenv); a first word with a slash is a path relative to"
        " workingDir; any other is looked up on PATH.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables added to the toolkit's."
    )
    working_dir: str | None = Field(
        default=None,
        alias="workingDir",
        min_length=1,
        description="The directory it runs in, relative to the target file (default: the"
        " target file's directory).",
    )
    crds: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Manifest files or directories (their *.yaml, *.yml, *.json) applied"
        " before it starts, relative to the target file: its CRDs (and anything else it needs).",
    )


class OperatorInstall(_Strict):
    """How the operator gets installed: a kustomize directory, a chart, a local process the
    toolkit runs, already installed (then only checked), or the toolkit's own WebApp operator."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["kustomize"]},
                {"required": ["chart"]},
                {"required": ["process"]},
                {"required": ["alreadyInstalled"]},
                {"required": ["toolkit"]},
            ]
        }
    )

    kustomize: str | None = Field(
        default=None,
        min_length=1,
        description="A kustomize directory, relative to the target file.",
    )
    chart: OperatorChart | None = None
    process: OperatorProcess | None = None
    already_installed: Literal[True] | None = Field(
        default=None,
        alias="alreadyInstalled",
        description="The operator runs already: it is checked, never installed or removed.",
    )
    toolkit: Literal[True] | None = Field(
        default=None,
        description="The toolkit's own WebApp operator: its CRD, webhook and RBAC installed and"
        " the operator run as a local process, shared and never removed. The resources are"
        " WebApps, ready when Available and judged against the built-in chart's rendering.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        _one_of(
            self,
            {
                "kustomize": ("kustomize",),
                "chart": ("chart",),
                "process": ("process",),
                "alreadyInstalled": ("already_installed",),
                "toolkit": ("toolkit",),
            },
        )
        return self


class Ready(_Strict):
    """How to tell a custom resource is ready: a status condition, or its children ready."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["condition"]}, {"required": ["children"]}]}
    )

    condition: str | None = Field(
        default=None,
        pattern=CONDITION_TYPE,
        max_length=316,
        description="A condition type that must be True (e.g. Available).",
    )
    children: Literal[True] | None = Field(
        default=None,
        description="Ready when every object it owns (transitively) is ready.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        _one_of(self, {"condition": ("condition",), "children": ("children",)})
        return self


# A field manager's name as the API server records it (at most 128 characters).
FieldManager = Annotated[str, Field(min_length=1, max_length=128)]


class OperatorSpec(_Strict):
    """The operator approach: install the operator, apply its custom resource(s), wait."""

    # `ready` for every install form but the toolkit's (a WebApp is ready when Available).
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"install": {"required": ["toolkit"]}}},
            "then": {"not": {"required": ["ready"]}},
            "else": {"required": ["ready"]},
        }
    )

    install: OperatorInstall
    resources: list[str | dict[str, Any]] = Field(
        min_length=1,
        description="The custom resources: files relative to the target file, or inline objects"
        " (WebApps with install.toolkit).",
    )
    ready: Ready | None = Field(
        default=None,
        description="How to tell the resources are ready (required; not with install.toolkit).",
    )
    field_managers: list[FieldManager] = Field(
        default_factory=list,
        alias="fieldManagers",
        max_length=64,
        description="The field managers the operator writes under (`metadata.managedFields`),"
        " besides those found from its owner references and status writes: a field one of"
        " them owns is the operator's in the baseline (e.g. both `main` and `manager`, the"
        " same operator run by `go run` and as its built binary).",
    )
    reclaim_foreign: bool = Field(
        default=False,
        alias="reclaimForeign",
        description="Consent to delete an owned object whose content another field manager"
        " owns (a `kubectl set image` and its undo) when the baseline is taken, for the"
        " operator to re-create it, and to take the baseline again: the operator proves what"
        " it writes. Without it such a baseline is refused.",
    )

    @model_validator(mode="after")
    def _ready_unless_toolkit(self) -> Self:
        if self.install.toolkit and self.ready is not None:
            raise ValueError(
                "ready is not part of install.toolkit (a WebApp is ready when Available)"
            )
        if not self.install.toolkit and self.ready is None:
            raise ValueError("ready: required field is missing (only install.toolkit goes without)")
        return self

    @field_validator("resources", mode="before")
    @classmethod
    def _paths_or_objects(cls, value: Any) -> Any:
        # Checked before the union so that the message names the item, not a union member.
        if isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, str | dict):
                    raise ValueError(
                        f"[{index}] must be a file path or an inline object"
                        f" (got {type(item).__name__} {item!r})"
                    )
        return value


# The kinds of arm a target file's key holds: a chart (`ChartArm`) or an operator
# (`OperatorSpec`).
ArmKind = Literal["chart", "operator"]
ARM_SPECS: dict[str, type[_Strict]] = {"chart": ChartArm, "operator": OperatorSpec}


@dataclass(frozen=True)
class ArmKey:
    """A top-level key of a target file: the arm of the approach it is named after, of one
    kind, with its description in the JSON schema. Declared by the approach."""

    name: str
    kind: ArmKind
    description: str


class PartsSpec(_Strict):
    """Which of the app's objects the faults act on (default: the main Service and the
    workload whose pods it selects; `compare.judge.parts`)."""

    workload: str | None = Field(
        default=None,
        # Checked by `_workload_ref` (its message names the kinds); the schema says it too.
        json_schema_extra={"pattern": WORKLOAD_REF},
        max_length=300,
        description="The workload the faults act on: `Kind/name` (Deployment, StatefulSet,"
        " DaemonSet) or `name`, as the chart renders it under one of the file's release"
        " names (each chart arm, and each trial of a run, renames it with its own release).",
    )
    service: str | None = Field(
        default=None,
        pattern=f"^{OBJECT_NAME}$",
        max_length=253,
        description="The Service the faults act on, by name (as for `workload`).",
    )

    @field_validator("workload")
    @classmethod
    def _workload_ref(cls, value: str | None) -> str | None:
        if value is not None and not re.match(WORKLOAD_REF, value):
            raise ValueError(f"{value!r}: give Kind/name ({', '.join(WORKLOAD_KINDS)}) or a name")
        return value


class TargetFile(_Strict):
    """A target file: the app under test and how each approach deploys it."""

    api_version: Literal["compare.example.com/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Target"]
    name: str = Field(
        pattern=DNS_LABEL,
        max_length=RELEASE_MAX,
        description="The app's name (and default release).",
    )
    namespace: str | None = Field(
        default=None,
        pattern=DNS_LABEL,
        max_length=NAMESPACE_MAX,
        description="The namespace it is deployed to (default: the command's).",
    )
    parts: PartsSpec | None = Field(
        default=None,
        description="Which workload and Service the faults act on (default: the main Service"
        " and the workload whose pods it selects).",
    )

    @model_validator(mode="after")
    def _some_approach(self) -> Self:
        # The arms are the fields `target_file_model` adds.
        arms = [name for name in type(self).model_fields if name not in TargetFile.model_fields]
        if all(getattr(self, name) is None for name in arms):
            *first, last = arms or [""]
            listed = f"{', '.join(first)} or {last}" if first else last
            raise ValueError(f"name at least one approach: {listed}")
        return self


# The keys of every target file, never an arm's.
RESERVED = frozenset({"apiVersion", "kind", "name", "namespace", "parts"})


def target_file_model(arms: Sequence[ArmKey]) -> type[TargetFile]:
    """The model of a target file whose arms are `arms` (optional keys, in that order)."""
    return _target_file_model(tuple(arms))


@functools.cache
def _target_file_model(arms: tuple[ArmKey, ...]) -> type[TargetFile]:
    for key in arms:
        if key.name in RESERVED:
            raise ValueError(f"approach {key.name}: a target file's own key, not an arm's")
    fields: dict[str, Any] = {
        key.name: (ARM_SPECS[key.kind] | None, Field(default=None, description=key.description))
        for key in arms
    }
    return create_model("TargetFile", __base__=TargetFile, __doc__=TargetFile.__doc__, **fields)
