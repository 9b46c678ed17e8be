"""One table of kinds (`compare.judge.kinds.KINDS`): no other module of `compare` spells a list
of workload kinds. A tuple, list, set or dict literal holding two or more names of kinds that
make pods (any case: `"statefulset"` is a field-path root of the same kind) is a second list a
new kind would have to be added to; it is derived from the table instead."""

from __future__ import annotations

import ast
from pathlib import Path

from compare.judge.kinds import POD_MAKERS
from tests.architecture.imports import ROOT

TABLE = ROOT / "compare" / "judge" / "kinds.py"
NAMES = frozenset(name.lower() for name in POD_MAKERS)


def kind_lists(path: Path, names: frozenset[str], *, root: Path = ROOT) -> list[str]:
    """`path:line: the names` of each collection literal in `path` holding two or more of
    `names` (compared in lower case)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [key for key in node.keys if key is not None]
        else:
            continue
        held = [
            e.value
            for e in elements
            if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.lower() in names
        ]
        if len(held) >= 2:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(held)}")
    return found


def test_only_the_table_lists_workload_kinds() -> None:
    found = [
        line
        for path in sorted((ROOT / "compare").rglob("*.py"))
        if path != TABLE
        for line in kind_lists(path, NAMES)
    ]
    assert found == []


def test_the_names_are_those_of_the_kinds_that_make_pods() -> None:
    assert sorted(NAMES) == [
        "cronjob",
        "daemonset",
        "deployment",
        "job",
        "replicaset",
        "statefulset",
    ]


def test_a_list_of_workload_kinds_is_found_in_any_literal_and_case(tmp_path: Path) -> None:
    source = tmp_path / "compare" / "some.py"
    source.parent.mkdir()
    source.write_text(
        'A = ("Deployment", "StatefulSet")\n'
        'B = {"daemonset": 1, "Job": 2}\n'
        "C = [1, 'CronJob', 'Service']\n"
        'D = {"StatefulSet"} | {"Service", "ReplicaSet"}\n'
    )
    found = [line.split(": ", 1)[1] for line in kind_lists(source, NAMES, root=tmp_path)]
    assert found == ["Deployment, StatefulSet", "daemonset, Job"]
