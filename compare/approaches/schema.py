"""`python -m compare.approaches.schema`: docs/target.schema.json written (or `--check`ed)
from the target file's model with the registered approaches' keys (`compare.target.schema`).

Here, not in `compare.target`, because the keys are the registry's: a target file has one
per registered approach.
"""

from __future__ import annotations

import sys

from compare.approaches import target_arms
from compare.target import schema
from compare.webapp.schemas import Schema, schema_file_main


def target_schema() -> Schema:
    """The strict JSON schema of a target file of the registered approaches."""
    return schema.target_schema(target_arms())


def render() -> str:
    return schema.render(target_arms())


def main(argv: list[str] | None = None) -> int:
    return schema_file_main(
        schema.GENERATOR,
        "Write (or --check) docs/target.schema.json from the target file's model.",
        schema.SCHEMA_PATH,
        render,
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
