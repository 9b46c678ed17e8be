"""Field paths: how an experiment names the field its evidence tracks, and reading it.

A path starts with the object it reads (`deployment`, `service`, `replicaset`, `pods`) and
continues with keys separated by dots. A bracket picks a map key that contains dots or
slashes (`labels[app.kubernetes.io/component]`), a list item by its `name`
(`containers[webapp]`; an index such as `ports[0]` when no item has that name), or every
item (`containers[*].name`). Examples:

    deployment.spec.replicas
    deployment.spec.template.spec.containers[webapp].image
    deployment.spec.template.metadata.labels[app.kubernetes.io/component]
    deployment.spec.template.spec.containers[*].name
    service.spec.ports[http].port
    pods.ready
    endpointslices.foreign

Missing keys read as None, so a deleted object's field is simply None.
"""

from __future__ import annotations

import re
from typing import Any

from compare.errors import CompareError
from compare.judge.kinds import PART_KINDS

# The app's parts by kind (the first of each kind in the desired objects), a Deployment's
# current ReplicaSet, its pods (`pods.ready`, `pods.uids`) and the EndpointSlices someone else
# added for its Services (`endpointslices.foreign`: their names).
ROOTS = (*(name.lower() for name in PART_KINDS), "replicaset", "pods", "endpointslices")
ALL = "*"

_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_-]*)|\[([^\[\]]+)\]")


def parse_path(path: str) -> list[str]:
    """Split a path into keys; raises CompareError naming the path when it is malformed."""
    keys: list[str] = []
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None or (pos == 0 and path.startswith(".")):
            raise CompareError(f"field path {path!r}: cannot parse at {path[pos:]!r}")
        keys.append(match.group(1) or match.group(2))
        pos = match.end()
    if not keys or keys[0] not in ROOTS:
        raise CompareError(f"field path {path!r}: must start with one of {', '.join(ROOTS)}")
    return keys


def read_path(path: str, objects: dict[str, Any]) -> Any:
    """The value at `path` in `objects` (root name -> API JSON), None where it is missing."""
    return _walk(objects, parse_path(path))


def _walk(value: Any, keys: list[str]) -> Any:
    for index, key in enumerate(keys):
        if value is None:
            return None
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list):
            if key == ALL:
                return [_walk(item, keys[index + 1 :]) for item in value]
            found = next(
                (item for item in value if isinstance(item, dict) and item.get("name") == key),
                None,
            )
            if found is None and key.isdigit() and int(key) < len(value):
                found = value[int(key)]  # an unnamed item (a Service's only port) by index
            value = found
        else:
            return None
    return value
