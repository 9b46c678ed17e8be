"""What the table of bad inputs and the second sweep's cases share: the case type, the
special file markers and a valid WebApp (imported by both without a cycle)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FIFO = "<fifo>"
# A symbolic link to the path after the colon (made as it is: relative or absolute).
SYMLINK = "<symlink>:"
DIRECTORY = "<directory>"
DEV_ZERO = "<dev-zero>"
NO_CLUSTER = ["--kubeconfig", "{tmp}/no-cluster"]


@dataclass(frozen=True)
class Case:
    id: str
    args: list[str]
    files: dict[str, Any] = field(default_factory=dict)
    expected: str = ""
    exit_code: int = 2
    env: dict[str, str | None] = field(default_factory=dict)
    # Further fragments the line must hold as well (the file named, then the key, ...).
    also: tuple[str, ...] = ()

    @property
    def cls(self) -> str:
        return self.id.split("/", 1)[0]


VALID_APP: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop"},
    "spec": {
        "replicas": 2,
        "image": "shop:v1",
        "port": 8080,
        "env": [{"name": "LOG_LEVEL", "value": "info"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    },
}
