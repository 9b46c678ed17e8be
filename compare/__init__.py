"""Helm-versus-Operator comparison toolkit.

Deploys one WebApp through a Helm chart and through the WebApp operator, injects faults
with chaostoolkit experiments and measures, per fault and per approach, whether the
desired state comes back, how fast, and on what evidence.

Layers, lowest first (a lower one never imports a higher one; docs/architecture.md,
enforced by tests/architecture):
  base         errors, paths, inputfile, outputfile, lazy: no Kubernetes knowledge
  kube         the Kubernetes API mechanics: apply, read, delete, wait, namespaces
  model        cluster (the embedded control plane, targets), webapp (the one WebApp spec)
  judge        judge (desired state, closed-world verdicts), target (target files), results
  operator     webapp_operator (its own package; shares base, kube, webapp and judge)
  deploy       the Helm, operator and Flux paths
  experiments  chaos (the chaostoolkit extension), approaches
  run          trials, timing and evidence
  verdicts     report, check: verdicts from results.json alone
  cli          thin Typer commands over all of the above
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
