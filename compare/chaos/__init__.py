"""Our chaostoolkit extension: the activities chaostoolkit-kubernetes lacks.

`actions` drifts the WebApp's Deployment and Service and stops/starts the operator,
`control_plane` restarts or stops the embedded cluster's own components, `probes`
judges whether the WebApp's desired state holds, `fields` reads the field an experiment's
evidence tracks, `cluster` points the activities (and chaosk8s's) at one kubeconfig. The
experiments in experiments/ call these by module path, so `chaos run` works without our CLI.
Nothing here runs trials or measures time: that is `compare.run`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXTENSION_NAME", "discover"]

EXTENSION_NAME = "compare-chaos"


def discover(discover_system: bool = True) -> Any:
    """What `chaos discover` lists: every exported action and probe of this extension."""
    # chaoslib is imported here so `import compare.chaos.fields` stays light.
    from chaoslib.discovery.discover import (
        discover_actions,
        discover_probes,
        initialize_discovery_result,
    )

    from compare import __version__

    discovery = initialize_discovery_result(EXTENSION_NAME, __version__, "kubernetes")
    discovery["activities"].extend(discover_actions("compare.chaos.actions"))
    discovery["activities"].extend(discover_actions("compare.chaos.control_plane"))
    discovery["activities"].extend(discover_probes("compare.chaos.probes"))
    return discovery
