"""Writing a user's experiment file: the built-in contract around one action of your own."""

from __future__ import annotations

import json
from typing import Any

from compare.paths import EXPERIMENTS_DIR


def _experiment(title: str, action: dict[str, Any], extension: dict[str, Any] | None) -> Any:
    # The contract (configuration, hypothesis, final wait) copied from a built-in experiment.
    base = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    doc = {
        "version": "1.0.0",
        "title": title,
        "description": f"{title}, written by a user.",
        "configuration": base["configuration"],
        "steady-state-hypothesis": base["steady-state-hypothesis"],
        "method": [action, base["method"][-1]],
    }
    if extension is not None:
        doc["extensions"] = [extension]
    return doc


def _action(activity: str, module: str, func: str, **arguments: Any) -> dict[str, Any]:
    return {
        "type": "action",
        "name": activity,
        "provider": {"type": "python", "module": module, "func": func, "arguments": arguments},
    }


TARGET = {"name": "${webapp_name}", "ns": "${webapp_namespace}"}
