"""`compare.inert`, sink by sink, on the strings a hostile results.json, experiment or cluster
holds: an ESC sequence, a carriage return, a bidi override, a newline that starts a workflow
command, rich markup, a `javascript:` URL, a CDATA end, a NUL and a lone surrogate."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from compare import inert

CLEAR_SCREEN = "\x1b[2J"
HOSTILE = [
    "a\x1b[2Jb",
    "over\rwrite",
    "\u202eevil\u202c",
    "\u2066iso\u2069 \u200emark\u200f \u061c",
    "name\n::error::forged",
    "x\n::stop-commands::token",
    "\npolicy holds: 99 checks passed",
    "[bold]loud[/]",
    "a[/]b",
    "containers[webapp].image",
    "javascript:alert(1)",
    "]]>",
    "nul\x00byte",
    "lone \ud800 surrogate",
    "c1 \x9b31m and del \x7f",
    "line\u2028sep\u2029para",
]
# What a terminal or a log acts on: C0 (but tab), DEL, C1, bidi controls, line separators,
# surrogates.
ACTIVE = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\ud800-\udfff]"
)


@pytest.mark.parametrize("text", HOSTILE)
def test_visible_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = inert.visible(text)
    assert ACTIVE.search(shown) is None, shown
    shown.encode("utf-8")  # no lone surrogate left: every encoder writes it


def test_visible_names_each_character_it_escapes() -> None:
    assert inert.visible(CLEAR_SCREEN) == "\\x1b[2J"
    assert inert.visible("a\rb\nc") == "a\\rb\\nc"
    assert inert.visible("\u202eabc") == "\\u202eabc"
    assert inert.visible("\x00\x9b\x7f") == "\\x00\\x9b\\x7f"
    assert inert.visible("\ud800") == "\\ud800"
    # Plain text, tabs and other non-ASCII letters are left as they are.
    plain = "webapp-demo: healed 3/3 in 0.29 s\tüñï 日本 containers[webapp].image C:\\path"
    assert inert.visible(plain) == plain


def test_visible_multiline_keeps_newlines_only() -> None:
    assert inert.visible("one\ntwo\r\n\x1b", multiline=True) == "one\ntwo\\r\n\\x1b"


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_prints_the_text_as_it_is_shown(text: str) -> None:
    out = io.StringIO()
    console = Console(file=out, width=400, soft_wrap=True, highlight=False, color_system=None)
    console.print(inert.terminal(text))  # rich markup parsed: never a MarkupError
    printed = out.getvalue()
    assert printed == inert.visible(text) + "\n"
    assert ACTIVE.search(printed.removesuffix("\n")) is None


def test_terminal_keeps_brackets_that_rich_would_eat() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    for text in ("containers[webapp].image", "prod[bold]", "/cache/a[/]b", "[red]x"):
        console.print(inert.terminal(text))
    assert out.getvalue().splitlines() == [
        "containers[webapp].image",
        "prod[bold]",
        "/cache/a[/]b",
        "[red]x",
    ]


@pytest.mark.parametrize("text", HOSTILE)
def test_ci_line_is_one_line_no_runner_reads_as_a_command(text: str) -> None:
    line = inert.ci_line(f"FAIL {text}")
    assert "\n" not in line and "\r" not in line
    assert ACTIVE.search(line) is None
    assert not line.lstrip().startswith("::")


def test_ci_line_neutralises_workflow_commands() -> None:
    assert inert.ci_line("::error::forged") == "\\x3a:error::forged"
    assert inert.ci_line("  ::stop-commands::t") == "  \\x3a:stop-commands::t"
    # The older forms are read anywhere in a line.
    assert inert.ci_line("x ##[error]y") == "x #\\x23[error]y"
    assert inert.ci_line("x ##vso[task.setvariable]y") == "x #\\x23vso[task.setvariable]y"
    # A name that only holds colons or hashes elsewhere is left alone.
    assert inert.ci_line("helm/pod-delete: a::b #1") == "helm/pod-delete: a::b #1"
    # A newline inside a name can never start a line of its own.
    forged = inert.ci_line("FAIL x\n::error::y\npolicy holds: 9 checks passed")
    assert forged == "FAIL x\\n::error::y\\npolicy holds: 9 checks passed"


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_cell_never_breaks_a_table(text: str) -> None:
    cell = inert.markdown(text)
    assert ACTIVE.search(cell) is None
    assert re.search(r"(?<!\\)\|", cell) is None  # no unescaped cell separator
    assert "<" not in cell and ">" not in cell
    code = inert.markdown_code(text + "|`")
    assert ACTIVE.search(code) is None
    assert re.search(r"(?<!\\)\|", code) is None


def test_markdown_escapes_formatting_and_links() -> None:
    assert inert.markdown("*b* [l](javascript:x) `c`") == "\\*b\\* \\[l\\](javascript:x) \\`c\\`"
    assert inert.markdown("a\nb") == "a b"
    assert inert.markdown_code("a`b") == "``a`b``"


@pytest.mark.parametrize("text", HOSTILE)
def test_html_text_and_attributes(text: str) -> None:
    shown = inert.html(text)
    assert ACTIVE.search(shown.replace("\n", "")) is None
    assert not set(shown) & set("<>\"'")
    attribute = f'<p title="{inert.html(text + chr(34) + "><script>")}">x</p>'
    element = ET.fromstring(attribute)  # one element: the value never ends the attribute
    assert len(element) == 0
    assert element.get("title", "").endswith('"><script>')


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "file:///etc/passwd",
        "//evil.example/x",
        "http://[::1",
    ],
)
def test_html_href_drops_every_link_but_http_and_relative(url: str) -> None:
    assert inert.html_href(url) is None


def test_html_href_keeps_web_links_and_encodes_paths() -> None:
    assert inert.html_href("https://example.com/a?b=1&c=2") == "https://example.com/a?b=1&amp;c=2"
    assert inert.html_href("http://example.com/") == "http://example.com/"
    assert inert.html_href("journals/pod-delete-helm-1.json") == "journals/pod-delete-helm-1.json"
    assert inert.html_href("../run/j #1?.json") == "../run/j%20%231%3F.json"
    assert inert.html_href('journals/"><b>.json') == "journals/%22%3E%3Cb%3E.json"


@pytest.mark.parametrize("text", HOSTILE)
def test_junit_text_is_valid_xml_and_never_ends_cdata(text: str) -> None:
    shown = inert.junit(text)
    assert "]]>" not in shown
    assert ACTIVE.search(shown.replace("\n", "")) is None
    root = ET.Element("testcase", name=shown)
    root.text = shown
    parsed = ET.fromstring(ET.tostring(root, encoding="unicode"))
    assert parsed.text == shown and parsed.get("name") == shown


def test_junit_keeps_lines_and_names_what_it_escapes() -> None:
    assert inert.junit("a\nb\x00]]>") == "a\nb\\x00]]\\x3e"


def test_json_text_is_the_same_data_inert() -> None:
    data = {"runId": "\u202erun\ud800", "error": "\x1b[2J\x9b", "ok": "日本 [x]"}
    dumped = json.dumps(data, ensure_ascii=False)
    text = inert.json_text(dumped)
    assert ACTIVE.search(text) is None
    text.encode("utf-8")
    assert json.loads(text) == data


def test_encodable_writes_what_a_stream_cannot_hold_as_the_forms_escapes() -> None:
    text = 'ä 日 😀 "x"'
    assert inert.encodable(text, "utf-8") == text  # a stream that holds it: unchanged
    assert inert.encodable(text, "ascii") == '\\xe4 \\u65e5 \\U0001f600 "x"'
    assert inert.encodable(text, "ascii", form="xml") == '&#228; &#26085; &#128512; "x"'
    as_json = inert.encodable(json.dumps(text, ensure_ascii=False), "ascii", form="json")
    assert as_json == '"\\u00e4 \\u65e5 \\ud83d\\ude00 \\"x\\""'
    assert json.loads(as_json) == text
    assert inert.encodable("ä", "latin-1", form="json") == "ä"  # held by latin-1
