"""The complete objects each approach deploys for a WebApp: what the judge holds them to.

Helm: the chart's rendered manifest for the WebApp's values (`helm template`, hooks dropped) -
exactly what `helm upgrade --install` applies. Operator: the children its pure builders make
for the WebApp's CR - exactly what it applies. Nothing is picked field by field; the judge
(`compare.judge`) adds the API's defaults and compares closed-world.

Both steps are deterministic, so a process computes each once: a trial and the three
chaostoolkit probes of its experiment share one rendering and one server-side dry-run.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from kubernetes import client

from compare.deploy.helm import webapp_manifest
from compare.deploy.operator import operator_manifest
from compare.errors import CompareError
from compare.judge import DesiredObjects, with_api_defaults
from compare.webapp import WebApp

APPROACHES = ("helm", "operator")
# Trial namespaces are short-lived; a bounded cache keeps a long run's memory flat.
CACHE_SIZE = 256


def desired_manifest(
    approach: str, webapp: WebApp, namespace: str, *, release: str | None = None
) -> list[dict[str, Any]]:
    """The objects `approach` applies for `webapp` in `namespace` (no cluster needed)."""
    if approach not in APPROACHES:
        raise CompareError(f"approach {approach!r}: unknown (known: {', '.join(APPROACHES)})")
    if approach == "helm":
        return webapp_manifest(webapp, release=release)  # cached by the Helm path itself
    return operator_manifest(webapp, namespace)


_defaulted: OrderedDict[tuple[str, str, str], DesiredObjects] = OrderedDict()
_lock = threading.Lock()


def desired_objects(
    api: client.ApiClient,
    approach: str,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
) -> DesiredObjects:
    """The approach's objects with the API's defaults, ready for the judge."""
    objects = desired_manifest(approach, webapp, namespace, release=release)
    key = (str(api.configuration.host), namespace, json.dumps(objects, sort_keys=True))
    with _lock:
        found = _defaulted.get(key)
        if found is not None:
            _defaulted.move_to_end(key)
            return found
    desired = with_api_defaults(api, namespace, objects)
    with _lock:
        _defaulted[key] = desired
        while len(_defaulted) > CACHE_SIZE:
            _defaulted.popitem(last=False)
    return desired
