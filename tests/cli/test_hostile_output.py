"""A results.json written by someone else: its run id, experiment names and titles, errors,
skipped reasons, journal paths, app name and cluster address hold ESC sequences, carriage
returns, bidi overrides, rich markup, newlines that start workflow commands or fake lines, a
`javascript:` link, a CDATA end and control characters. `compare report` (every format) and
`compare check` print every one of them inert (`compare.inert`)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.results import RunResults
from tests.results.helpers import POLICY, fixture_json, write_run

runner = CliRunner()

# What every string below carries: each must reach no output as it is.
ESC = "\x1b[2J"
BIDI = "\u202e"
FORGED = "\n::error::forged\npolicy holds: 99 checks passed"
NAME = f"evil{ESC}[bold]x[/]{BIDI}{FORGED}"
# No NUL and no lone surrogate: a results file holding one is refused as input (one line,
# tests/cli/badinput); every other control character must come out inert.
ERROR = f"boom\r{ESC}]]>\x07 containers[webapp].image \x7f{FORGED}"
# What a terminal or a CI log would act on, or XML cannot hold.
ACTIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile(tmp: Path) -> Path:
    """The with-errors run, every foreign string of it hostile; saved as schemaVersion 3."""
    data = fixture_json("with-errors")
    data["runId"] = f"run{ESC}{BIDI}[/]{FORGED}"
    data["app"]["name"] = f"app[bold]{ESC}"
    data["cluster"].update(
        embedded=False, server=f"https://h{ESC}/[/]", context=f"prod[bold]{BIDI}"
    )
    old = data["experiments"][0]["name"]
    data["experiments"][0].update(name=NAME, title=f"title {ESC}{FORGED} ]]>")
    data["settings"]["experiments"] = [
        NAME if e == old else e for e in data["settings"]["experiments"]
    ]
    for trial in data["trials"]:
        if trial["experiment"] == old:
            trial.update(experiment=NAME, journal="javascript:alert(1)")
        if trial["status"] == "error":
            trial["error"] = ERROR
    doc: dict[str, Any] = RunResults.from_json(data).to_json()
    doc["skipped"] = [{"name": f"skip{ESC}[/]", "reason": f"no field {FORGED}{BIDI}"}]
    RunResults.from_json(doc)  # still a valid results file
    run = write_run(tmp, doc)
    return run / "results.json"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def _inert_lines(text: str) -> list[str]:
    """Every line of a plain-text output: none forged, none acting on the terminal."""
    assert ACTIVE.search(text.replace("\n", "").replace("\t", "")) is None, text
    lines = text.splitlines()
    for line in lines:
        assert not line.lstrip().startswith("::"), line
        assert not line.startswith("policy holds: 99"), line
    return lines


def test_report_table_prints_every_string_inert(tmp_path: Path) -> None:
    code, out, _ = _invoke("report", str(_hostile(tmp_path)))
    assert code == 0
    lines = _inert_lines(out)
    assert lines[0].startswith("run run\\x1b[2J\\u202e[/]\\n::error::forged\\npolicy holds")
    assert "cluster https://h\\x1b[2J/[/]" in lines[0]
    # The skipped reason and the error are one line each, brackets kept.
    assert (
        "  skip\\x1b[2J[/]: no field \\n::error::forged\\npolicy holds: 99 checks passed\\u202e"
        in (lines)
    )
    errors = [line for line in lines if "trials ended in error" in line]
    assert errors and all("boom\\r\\x1b[2J]]>\\x07 containers[webapp].image" in e for e in errors)


def test_report_markdown_is_inert(tmp_path: Path) -> None:
    code, out, _ = _invoke("report", str(_hostile(tmp_path)), "-f", "md")
    assert code == 0
    lines = _inert_lines(out)
    assert "\\x1b" in out and "\\u202e" in out
    # Every table row has as many unescaped cell separators as its header.
    rows = [line for line in lines if line.startswith("|")]
    assert len({len(re.findall(r"(?<!\\)\|", row)) for row in rows[:2]}) == 1


def test_report_html_is_inert_and_links_no_script(tmp_path: Path) -> None:
    code, text, _ = _invoke("report", str(_hostile(tmp_path)), "-f", "html", "-o", "-")
    assert code == 0
    assert ACTIVE.search(text.replace("\n", "")) is None
    assert "javascript:" not in re.sub(r"<[^>]*>", "", text).replace("javascript:alert(1)", "")
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert hrefs and not [h for h in hrefs if ":" in h.split("/")[0]], hrefs
    # The journal is shown, as text.
    assert "<td>javascript:alert(1)</td>" in text


def test_report_junit_is_valid_xml_without_cdata_end(tmp_path: Path) -> None:
    code, out, _ = _invoke(
        "report", str(_hostile(tmp_path)), "-f", "junit", "--policy", str(POLICY)
    )
    assert code == 0
    assert "]]>" not in out
    assert ACTIVE.search(out.replace("\n", "")) is None
    root = ET.fromstring(out)
    texts = " ".join(e.text or "" for e in root.iter()) + " ".join(
        v for e in root.iter() for v in e.attrib.values()
    )
    assert "]]\\x3e" in texts and "\\x1b[2J" in texts


def test_report_json_is_the_data_with_inert_characters(tmp_path: Path) -> None:
    code, out, _ = _invoke("report", str(_hostile(tmp_path)), "-f", "json")
    assert code == 0
    assert ACTIVE.search(out.replace("\n", "")) is None
    assert json.loads(out)["runId"] == f"run{ESC}{BIDI}[/]{FORGED}"


@pytest.mark.parametrize("verbose", [False, True])
def test_check_prints_one_finding_per_line_none_forged(tmp_path: Path, verbose: bool) -> None:
    args = ["check", str(_hostile(tmp_path)), "--policy", str(POLICY)]
    code, out, _ = _invoke(*args, *(["-v"] if verbose else []))
    assert code == 1  # the error trials break the policy; the fake "holds" line changes nothing
    lines = _inert_lines(out)
    assert lines[-1].startswith("policy broken: ")
    prefixes = {line.split(" ", 1)[0] for line in lines[1:-1]}
    assert prefixes <= {"FAIL", "ok", "note"}, prefixes
    assert any("evil\\x1b[2J[bold]x[/]\\u202e\\n::error::forged" in line for line in lines)


def test_errors_naming_hostile_paths_are_one_inert_line(tmp_path: Path) -> None:
    """A path with a newline, an ESC and `[/]` in an error: one line, shown escaped, never a
    MarkupError."""
    bad = tmp_path / f"x{ESC}[/]{FORGED}"
    code, out, err = _invoke("report", str(bad / "results.json"))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "x\\x1b[2J[/]\\n::error::forged\\npolicy holds" in lines[0]


def test_the_cli_prints_no_formatted_string_past_the_output_layer() -> None:
    """A line built from values (an f-string) reaches rich or click only through
    `compare.inert` (`say`, `print_warning`, `print_error`, `terminal`, `ci_line`): printed
    directly, a name in it would be read as markup or act on the terminal."""
    import ast

    import compare.cli

    direct = {"print", "echo", "status", "update", "add_task", "add_row"}

    def raw(arg: ast.expr) -> bool:
        """An f-string with a value not made inert by `terminal(...)` in it."""
        return isinstance(arg, ast.JoinedStr) and any(
            isinstance(part, ast.FormattedValue)
            and not (
                isinstance(part.value, ast.Call)
                and getattr(part.value.func, "id", getattr(part.value.func, "attr", ""))
                == "terminal"
            )
            for part in arg.values
        )

    found = []
    for path in sorted(Path(compare.cli.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in direct
                and any(raw(arg) for arg in node.args)
            ):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_run_progress_lines_keep_brackets_and_show_controls() -> None:
    """A skipped line (`containers[memcached].image`), a trial's label and its error from
    the cluster: printed as they are, never eaten as markup, never acting on the terminal."""
    from compare.cli.common import console
    from compare.cli.run_cmd import _ProgressListener

    listener = _ProgressListener(1)
    with console.capture() as captured:
        listener.note("skipped image-change: no containers[memcached].image in Memcached")
        listener.note(f"skipped x: {ERROR}")
    lines = captured.get().splitlines()
    assert lines[0] == "skipped image-change: no containers[memcached].image in Memcached"
    shown = "skipped x: boom\\r\\x1b[2J]]>\\x07 containers[webapp].image \\x7f\\n"
    assert lines[1].startswith(shown)
    assert len(lines) == 2
    _inert_lines(captured.get())


def test_status_table_shows_cluster_strings_as_they_are() -> None:
    """`compare status`: names, images and conditions from the cluster, in a rich table."""
    import io

    from rich.console import Console

    from compare.cli.status_cmd import _table
    from compare.deploy.rows import DeployedApp

    row = DeployedApp(
        "operator",
        "Memcached/memcached[bold]",
        "ns",
        f"Ready False{ESC}",
        3,
        1,
        "memcached:1.6[/]",
        "drifted: statefulset.spec.template.spec.containers[memcached].image",
    )
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(_table([row]))
    line = next(x for x in out.getvalue().splitlines() if x.startswith("operator"))
    assert line.split() == [
        "operator",
        "Memcached/memcached[bold]",
        "ns",
        "1/3",
        "memcached:1.6[/]",
        "Ready",
        "False\\x1b[2J",
        "drifted:",
        "statefulset.spec.template.spec.containers[memcached].image",
    ]


@pytest.mark.parametrize("fmt", ["table", "md", "html", "json", "junit"])
def test_an_ascii_terminal_gets_escapes_never_an_encoding_error(tmp_path: Path, fmt: str) -> None:
    """`LC_ALL=C` (an ASCII stdout): a report of non-ASCII names is written with the format's
    own escapes, exit 0 (before: exit 3, UnicodeEncodeError)."""
    import os
    import subprocess
    import sys

    data = fixture_json("with-errors")
    data["runId"] = "run-日本-ü"
    data["app"]["name"] = "äpp"
    source = write_run(tmp_path, data) / "results.json"
    env = {**os.environ, "LC_ALL": "C", "PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"}
    script = "import sys; from compare.cli import main; sys.argv[0] = 'compare'; main()"
    done = subprocess.run(
        [sys.executable, "-c", script, "report", str(source), "-f", fmt, "-o", "-"],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")  # ASCII only
    shown = {
        "table": "run-\\u65e5\\u672c-\\xfc",
        "md": "run-&#26085;&#26412;-&#252;",
        "html": "run-&#26085;&#26412;-&#252;",
        "junit": "run-&#26085;&#26412;-&#252;",
        "json": "run-\\u65e5\\u672c-\\u00fc",
    }[fmt]
    assert shown in out
    if fmt == "json":
        assert json.loads(out)["runId"] == "run-日本-ü"
    if fmt == "junit":
        assert ET.fromstring(out).get("name") == "compare run-日本-ü"


def test_check_on_an_ascii_terminal_is_a_verdict_not_a_crash(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    data = fixture_json("with-errors")
    for trial in data["trials"]:
        if trial["status"] == "error":
            trial["error"] = "kaputt: äöü"
    source = write_run(tmp_path, data) / "results.json"
    env = {**os.environ, "LC_ALL": "C", "PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"}
    script = "import sys; from compare.cli import main; sys.argv[0] = 'compare'; main()"
    done = subprocess.run(
        [sys.executable, "-c", script, "check", str(source), "--policy", str(POLICY)],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # the policy is broken: a verdict, not a crash
    # click writes UTF-8 to a stream whose locale says ASCII (its own rule for a misconfigured
    # locale): the names arrive whole.
    assert "kaputt: äöü" in done.stdout.decode("utf-8")
    assert b"unexpected" not in done.stderr
