"""JSON schemas generated from the WebApp model: one source for the chart and the CRD.

`spec_schema()` is the WebApp spec as a plain, self-contained JSON schema (no $refs, no
titles, Optional fields as their inner type, `additionalProperties: false`). The chart's
values.schema.json and the operator's CRD are both derived from it.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from compare.paths import IN_SOURCE_TREE, SOURCE_TREE_ONLY
from compare.webapp.spec import WebAppSpec

Schema = dict[str, Any]


def plain_schema(model: type[BaseModel]) -> Schema:
    raw = model.model_json_schema()
    defs: dict[str, Schema] = raw.pop("$defs", {})
    return _simplify(raw, defs)


def spec_schema() -> Schema:
    return plain_schema(WebAppSpec)


def _simplify(node: Any, defs: dict[str, Schema]) -> Any:
    if isinstance(node, list):
        return [_simplify(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _simplify({**target, **extra}, defs)
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        # Optional[X] is anyOf [X, null]: absent means unset, so X alone is the schema.
        non_null = [s for s in any_of if s.get("type") != "null"]
        if len(non_null) == 1:
            rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
            return _simplify({**non_null[0], **rest}, defs)
    out: Schema = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "default" and value is None:
            continue
        if key == "properties":
            out[key] = {name: _simplify(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _simplify(value, defs)
    return out


def schema_file_main(
    prog: str, description: str, default: Path, render: Callable[[], str], argv: list[str] | None
) -> int:
    """The command line of a generated schema file: write it when it differs, or with
    `--check` exit 1 when the committed file is stale."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--output", type=Path, default=default)
    args = parser.parse_args(argv)
    text = render()
    current = args.output.read_text() if args.output.exists() else None
    if args.check:
        if current != text:
            print(f"{args.output} is stale; regenerate it with `python -m {prog}`", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    if current != text:
        if args.output == default and not IN_SOURCE_TREE:
            print(f"python -m {prog}: {SOURCE_TREE_ONLY}", file=sys.stderr)
            return 2
        args.output.write_text(text)
        print(f"wrote {args.output}")
    else:
        print(f"{args.output} is up to date")
    return 0
