"""Your own app under test: the target file, and what it makes of any chart or operator.

A target file (`compare.yaml`, schema in docs/target.schema.json, examples in examples/) says
how each approach deploys an app, under a key named after the approach. Each approach declares
its key (an `ArmKey`) and the kind of arm it holds: a chart (its values and release) or an
operator (how it is installed, which custom resources to apply, how to tell they are ready).
Which approaches there are is the registry's (`compare.approaches`, a layer above): it hands
its keys to the functions here (`arms=`) and offers them without (`compare.approaches.
load_target`, `builtin_target`). Here:

  model    the file as written: strict pydantic models (the JSON schema is generated from them)
  load     reading one: paths resolved against the file, values merged, resources read,
           every problem one CompareError line naming the file and the field
  schema   docs/target.schema.json, generated from the model (`python -m
           compare.approaches.schema`, `--check` for CI)
  builtin  the built-in WebApp as a target (`builtin_target`): what runs without a target file;
           a release of its chart found deployed, as that target (`builtin_release`)

Deploying and judging live elsewhere (`compare.deploy`, `compare.judge`); nothing here talks
to a cluster. Without a target file every command uses the built-in WebApp, as a target.
"""

from compare.target.builtin import builtin_target
from compare.target.load import (
    DROP_API_SERVICES,
    DROP_WEBHOOKS,
    HelmInstall,
    Operator,
    OperatorCommand,
    Target,
    load_target,
    merge_values,
    parse_target,
    release_in,
)
from compare.target.model import API_VERSION, KIND, ArmKey, ArmKind

__all__ = [
    "API_VERSION",
    "DROP_API_SERVICES",
    "DROP_WEBHOOKS",
    "KIND",
    "ArmKey",
    "ArmKind",
    "HelmInstall",
    "Operator",
    "OperatorCommand",
    "Target",
    "builtin_target",
    "load_target",
    "merge_values",
    "parse_target",
    "release_in",
]
