"""Strings that did not come from the toolkit's own source, rendered inert for each sink.

A run id, an experiment's title, an error message, a skipped reason, a label value or a
context name comes from a file or a cluster someone else wrote. Printed as it is, it can
rewrite what a terminal shows (an ESC sequence, a carriage return, a bidi override), forge a
line of a CI log (a newline then `::error::...` or a fake "policy holds"), be eaten as rich
markup (`containers[webapp].image`, a path holding `[/]`), break a Markdown table, run in an
HTML report (`javascript:` links) or end a JUnit CDATA section. Every sink has one function:

- `visible`: any plain-text sink. C0 and C1 control characters, DEL, bidi controls, line and
  paragraph separators and lone surrogates are shown as escapes (`\\x1b`, `\\u202e`, `\\n`),
  so the text cannot move the cursor, reorder what follows or break the line.
- `terminal`: a string printed where rich parses markup: `visible`, then markup escaped.
- `ci_line`: one line of a CI log (`compare check`): `visible`, and workflow-command prefixes
  (`::` at a line's start, `##[` and `##vso[` anywhere) neutralised.
- `markdown` and `markdown_code`: a Markdown table cell or line, as text or as a code span.
- `html` (text and attribute values) and `html_href` (only http(s) and relative links).
- `junit`: XML text: no character XML 1.0 forbids, no `]]>`.
- `json_text`: a JSON document's non-ASCII controls and lone surrogates as `\\uXXXX` escapes.
- `encodable`: any of these for a stream whose encoding cannot hold a character (`LC_ALL=C`).

The toolkit's own words around such a string need none of this; a whole line that mixes both
may be passed as one string (the toolkit's own text holds none of these characters).
"""

from __future__ import annotations

import html as _html
import re
from urllib.parse import quote, urlsplit

# Control characters (C0 but tab, DEL, C1), bidi embeddings, overrides, isolates and marks,
# the Unicode line and paragraph separators, and lone surrogates (which no encoder writes).
_CONTROLS = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\ud800-\udfff"
)
_UNSAFE_CHAR = re.compile(rf"[\n{_CONTROLS}]")
# The same, but newlines kept (a multi-line block: JUnit's system-out, an HTML <pre>).
_UNSAFE_BUT_NEWLINE = re.compile(rf"[{_CONTROLS}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """`text` with every character that could act on a terminal or a log shown as an escape.

    One line unless `multiline` (then newlines stay; carriage returns never do)."""
    pattern = _UNSAFE_BUT_NEWLINE if multiline else _UNSAFE_CHAR
    return pattern.sub(_escape, text)


def terminal(text: str) -> str:
    """For a rich console that parses markup (a status line, a table cell, a progress line):
    one visible line whose brackets print as they are (never a `MarkupError`)."""
    from rich.markup import escape  # the reports import this module and never print

    return escape(visible(text))


# A workflow command: `::name ...::` at a line's start (GitHub Actions trims the line's
# leading blanks first), `##[name]` (its older form) and `##vso[` (Azure Pipelines) anywhere.
_CI_LINE_START = re.compile(r"^(\s*):(?=:)")
_CI_ANYWHERE = re.compile(r"##(?=\[|vso\[)")


def ci_line(text: str) -> str:
    """One line of a CI log that no tool reads as a command and that forges no other line:
    `visible`, a leading `::` shown as `\\x3a:`, `##[`/`##vso[` as `#\\x23[`/`#\\x23vso[`."""
    line = _CI_LINE_START.sub(lambda m: f"{m.group(1)}\\x3a", visible(text), count=1)
    return _CI_ANYWHERE.sub("#\\\\x23", line)


# Markdown punctuation that could start formatting, a link or a code span, or end a table cell.
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]|#!~])")
_LINE_BREAKS = re.compile(r"\s*[\r\n\u2028\u2029]+\s*")


def markdown(text: str) -> str:
    """Plain text safe in a Markdown line or table cell: no raw HTML, no formatting, no broken
    table cell, no line break (`visible` for the rest).

    `<`, `>` and `&` become entities (so `<img onerror=...>` from a results file is shown, not
    run), Markdown punctuation is backslash-escaped and line breaks become spaces."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_PUNCTUATION.sub(r"\\\1", text)
    return visible(_LINE_BREAKS.sub(" ", text))


def markdown_code(text: str) -> str:
    """An inline code span that holds any text (backticks, pipes) without breaking out."""
    text = visible(_LINE_BREAKS.sub(" ", text)).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html(text: str) -> str:
    """Text or an attribute's value in HTML: markup characters and quotes as entities,
    controls and bidi characters as visible escapes (newlines kept: HTML folds them)."""
    return _html.escape(visible(text, multiline=True), quote=True)


_LINK_SCHEMES = ("http", "https")


def html_href(url: str) -> str | None:
    """An `href` value (escaped) when `url` is an http(s) URL or a relative path, else None:
    the caller shows the text without a link (a `javascript:` or `data:` URL never is one).

    A relative path is percent-encoded, so a colon in it never reads as a scheme."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced `[` in the host part
        return None
    if parts.scheme:
        if parts.scheme.lower() not in _LINK_SCHEMES or _UNSAFE_CHAR.search(url):
            return None
        return html(url)
    if parts.netloc or url.startswith("//"):  # protocol-relative: another host
        return None
    return html(quote(url, safe="/", errors="backslashreplace"))


# XML 1.0 allows tab, newline and carriage return of the C0 controls; never U+FFFE/U+FFFF.
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def junit(text: str) -> str:
    """XML text or an attribute value for a JUnit file: every character XML 1.0 forbids and
    every control (`visible`, newlines kept) shown as an escape, and `]]>` never whole (a
    consumer that copies the text into a CDATA section would end it there)."""
    text = _NOT_XML.sub(_escape, visible(text, multiline=True))
    return text.replace("]]>", "]]\\x3e")


_JSON_UNSAFE = re.compile(
    r"[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def json_text(document: str) -> str:
    """A JSON document (`json.dumps` with `ensure_ascii=False`) with DEL, C1 controls, bidi
    characters and lone surrogates written as `\\uXXXX` escapes: the same data, but inert on a
    terminal and encodable (JSON escapes the C0 controls itself). Outside strings a JSON
    document holds none of them, so the replacement only ever lands in a string."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def encodable(text: str, encoding: str | None, *, form: str = "text") -> str:
    """`text` as a stream in `encoding` can write it (an ASCII terminal: `LC_ALL=C`,
    `PYTHONIOENCODING=ascii`): each character it cannot hold written as an escape of the
    output's own kind, never a `UnicodeEncodeError`: `form` "text" `\\xe4`, "xml" (HTML,
    JUnit, Markdown) `&#xe4;`, "json" `\\u00e4` (a pair of them beyond the BMP; characters
    beyond ASCII only ever stand in a JSON document's strings)."""
    try:
        text.encode(encoding or "utf-8")
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    if form == "xml":
        return text.encode(encoding or "ascii", "xmlcharrefreplace").decode(encoding or "ascii")
    if form == "json":
        return "".join(_json_char(char, encoding or "ascii") for char in text)
    return text.encode(encoding or "ascii", "backslashreplace").decode(encoding or "ascii")


def _json_char(char: str, encoding: str) -> str:
    try:
        char.encode(encoding)
        return char
    except UnicodeEncodeError:
        code = ord(char)
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
