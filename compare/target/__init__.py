"""Your own app under test: the target file, and what it makes of any chart or operator.

A target file (`compare.yaml`, schema in docs/target.schema.json, examples in examples/) says
how each approach deploys an app: `helm` a chart with its values and release, `operator` how the
operator is installed and which custom resources to apply (and how to tell they are ready),
`flux` a chart for helm-controller, `argocd` a chart for an Argo CD Application. Here:

  model    the file as written: strict pydantic models (the JSON schema is generated from them)
  load     reading one: paths resolved against the file, values merged, resources read,
           every problem one CompareError line naming the file and the field
  schema   docs/target.schema.json, generated from the model (`--check` for CI)
  builtin  the built-in WebApp as a target (`builtin_target`): what runs without a target file;
           a release of its chart found deployed, as that target (`builtin_release`)

Deploying and judging live elsewhere (`compare.deploy`, `compare.judge`); nothing here talks
to a cluster. Without a target file every command uses the built-in WebApp, as a target.
"""

from compare.target.builtin import builtin_target
from compare.target.load import (
    Chart,
    HelmInstall,
    Operator,
    OperatorInstall,
    Target,
    load_target,
    merge_values,
    parse_target,
    release_in,
)
from compare.target.model import API_VERSION, KIND, TargetFile

__all__ = [
    "API_VERSION",
    "KIND",
    "Chart",
    "HelmInstall",
    "Operator",
    "OperatorInstall",
    "Target",
    "TargetFile",
    "builtin_target",
    "load_target",
    "merge_values",
    "parse_target",
    "release_in",
]
