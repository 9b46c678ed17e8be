"""Helm-versus-Operator comparison toolkit.

Deploys one WebApp through a Helm chart and through the WebApp operator, injects faults
with chaostoolkit experiments and measures, per fault and per approach, whether the
desired state comes back, how fast, and on what evidence.

Layers (lower never import higher):
  errors, paths            helpers with no Kubernetes knowledge
  cluster                  the embedded control plane and cluster targets
  webapp                   the one WebApp spec and its conversions (values, CR, desired state)
  deploy                   the Helm and operator paths
  chaos, run               experiments, trials, timing and evidence
  report, check            verdicts from results.json alone
  cli                      thin Typer commands over all of the above
"""

from typing import Any

from compare.errors import CompareError

__version__ = "0.1.0"
__all__ = ["CompareError", "__version__", "discover"]


def discover(discover_system: bool = True) -> Any:
    """`chaos discover --no-install helm-vs-operator` imports this package and calls this:
    the activities of our chaostoolkit extension, `compare.chaos`."""
    from compare.chaos import discover as discover_extension

    return discover_extension(discover_system)
