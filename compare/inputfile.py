"""Reading a file the user named: one helper for every input (WebApp, values, experiments,
policy, results, kubeconfig).

Every read is bounded: only a regular file is read (a device such as /dev/zero would never end,
a FIFO without a writer would block forever), at most `limit` bytes, and the text must be
UTF-8. Each problem is one CompareError line naming the file.
"""

from __future__ import annotations

import datetime
import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from compare.errors import CompareError

# Far above any real input (the largest results.json of a full run is a few MiB).
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_bytes(path: Path, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; CompareError otherwise."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        what = "a symlink to nothing" if os.path.islink(path) else "no such file"
        raise CompareError(f"{path}: {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CompareError(f"{path}: a symlink loop, not a file") from None
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise CompareError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise CompareError(f"{path}: not a regular file (a device, FIFO or socket is not read)")
    if info.st_size > limit:
        raise CompareError(f"{path}: larger than {_size(limit)} ({info.st_size} bytes)")
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open never blocks.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        reason = "permission denied" if exc.errno == errno.EACCES else exc.strerror or str(exc)
        raise CompareError(f"{path}: cannot read ({reason})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CompareError(f"{path}: not a regular file")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1024 * 1024, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise CompareError(f"{path}: larger than {_size(limit)}")
    except OSError as exc:
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: Path, *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file (see `read_bytes`); a BOM is dropped."""
    data = read_bytes(path, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CompareError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


# Bounds of every YAML and JSON input, far above any real file: an alias may stand for a
# subtree (Helm values use them), but all aliases together may add at most this many nodes (a
# 700-byte "billion laughs" file expands to billions); nesting deeper than this is no config.
MAX_ALIAS_NODES = 100_000
MAX_DEPTH = 100
# Integers with more digits than this are no count, port or size (and Python refuses to
# convert more than 4300 digits with a ValueError).
MAX_INT_DIGITS = 30

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1's resolver without base-60 numbers: `1:30` is the text "1:30", never 90."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_Resolver.add_implicit_resolver(
    _INT,
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Resolver.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
        r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


class BoundedLoader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    yaml.constructor.SafeConstructor,
    _Resolver,
):
    """PyYAML's safe loader with bounds checked while composing, before anything expands:
    alias expansion (MAX_ALIAS_NODES), nesting (MAX_DEPTH), duplicate keys, huge integers."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _Resolver.__init__(self)
        self._weights: dict[int, int] = {}
        self._alias_nodes = 0
        self._depth = 0

    def compose_document(self) -> Any:
        self._weights = {}  # node ids are per document (a freed node's id can come back)
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            if id(node) not in self._weights:  # its anchor is still being composed
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"alias *{event.anchor} is inside its own anchor (a recursive structure)",
                    event.start_mark,
                )
            self._alias_nodes += self._weights[id(node)]
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?)",
                    event.start_mark,
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        weight = 1
        if isinstance(node, yaml.SequenceNode):
            weight += sum(self._weights.get(id(child), 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            weight += sum(
                self._weights.get(id(k), 1) + self._weights.get(id(v), 1) for k, v in node.value
            )
        self._weights[id(node)] = weight
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue  # `<<: *defaults` then own keys: an override, not a duplicate
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # unhashable: the base class says so
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        digits = str(node.value).lstrip("+-").replace("_", "")
        if len(digits) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"number with {len(digits)} digits is too large", node.start_mark
            )
        return super().construct_yaml_int(node)


BoundedLoader.add_constructor(_INT, BoundedLoader.construct_yaml_int)  # type: ignore[type-var]


def parse_yaml(text: str, source: str) -> Any:
    """One YAML document (None when empty); several documents or bad syntax: CompareError."""
    documents = parse_yaml_all(text, source)
    documents = [doc for doc in documents if doc is not None] or [None]
    if len(documents) > 1:
        raise CompareError(
            f"{source}: holds {len(documents)} YAML documents (separated by ---); "
            "give exactly one per file"
        )
    return documents[0]


def parse_yaml_all(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream, through `BoundedLoader`; CompareError on a problem."""
    try:
        loader = BoundedLoader(text)
    except yaml.reader.ReaderError as exc:
        raise CompareError(_unprintable(source, exc)) from None
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
        for document in documents:
            check_strings(document, source)
        return documents
    except yaml.reader.ReaderError as exc:
        raise CompareError(_unprintable(source, exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        detail = f" ({problem})" if problem else ""
        raise CompareError(f"{source}: not valid YAML{where}{detail}") from None
    except RecursionError:
        raise CompareError(f"{source}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def _unprintable(source: str, exc: yaml.reader.ReaderError) -> str:
    """YAML allows no NUL, no other control character and no lone surrogate: a file holding
    one is binary (`/proc/self/environ`) or damaged, named as such with the offset."""
    character = exc.character
    code = f"U+{character:04X}" if isinstance(character, int) else repr(character)
    return (
        f"{source}: not YAML text (character {code} at offset {exc.position}: binary content"
        " or a control character YAML does not allow)"
    )


def check_plain(data: Any, source: str, where: str = "") -> None:
    """`data` holds only what JSON holds (strings, numbers, booleans, null, lists, mappings
    with string keys): YAML's `!!binary` (bytes), timestamps (`2024-01-01` is a date), sets and
    non-string keys would reach Helm or the API server as something else, or fail to encode."""
    if data is None or isinstance(data, str | bool | int):
        return  # strings: checked as the file was parsed (`check_strings`)
    if isinstance(data, float):
        if not math.isfinite(data):
            raise CompareError(f"{source}: {where or '(top level)'}: {data} is not a finite number")
        return
    if isinstance(data, list):
        for index, item in enumerate(data):
            check_plain(item, source, f"{where}[{index}]")
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                raise CompareError(
                    f"{source}: {where or '(top level)'}: key {key!r} is a"
                    f" {type(key).__name__}, not a string"
                )
            check_plain(value, source, f"{where}.{key}" if where else key)
        return
    raise CompareError(f"{source}: {where or '(top level)'}: {_kind_of(data)}")


# NUL is no text (a C string ends there: Helm, kubectl and the API server would cut it); a
# lone surrogate cannot be encoded as UTF-8 at all.
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def _bad_text(text: str) -> str:
    found = _BAD_TEXT.search(text)
    assert found is not None
    char = found.group()
    what = "a NUL character" if char == "\x00" else "a lone surrogate"
    return f"holds {what} (U+{ord(char):04X} at offset {found.start()}): not text"


def check_strings(data: Any, source: str, where: str = "") -> None:
    """Every string (key or value) of parsed JSON or YAML is text: no NUL, no lone surrogate
    (an experiment's title, a journal's path, a name would fail later to encode or to open)."""
    if isinstance(data, str):
        if _BAD_TEXT.search(data):
            raise CompareError(f"{source}: {where or '(top level)'}: {_bad_text(data)}")
    elif isinstance(data, list):
        for index, item in enumerate(data):
            check_strings(item, source, f"{where}[{index}]")
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and _BAD_TEXT.search(key):
                raise CompareError(f"{source}: {where or '(top level)'}: a key {_bad_text(key)}")
            check_strings(value, source, f"{where}.{key}" if where else str(key))


def _kind_of(value: Any) -> str:
    if isinstance(value, bytes):
        return "a YAML !!binary value (bytes); give it as a string (base64 text if meant)"
    if isinstance(value, datetime.date):
        return f"{value.isoformat()} was read as a YAML timestamp; quote it to give a string"
    return f"a {type(value).__name__} value, which JSON (and Helm values) cannot hold"


def parse_json(text: str, source: str) -> Any:
    """A JSON document: duplicate keys, huge integers and runaway nesting refused."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise CompareError(f"{source}: not valid JSON (duplicate key {key!r})")
            seen[key] = value
        return seen

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise CompareError(
                f"{source}: not valid JSON (number with {len(digits)} digits is too large)"
            )
        return int(digits)

    def constant(name: str) -> float:
        # Python's json reads NaN and Infinity, which JSON has not: an infinite heal window
        # or a NaN time would pass every range check that compares.
        raise CompareError(f"{source}: not valid JSON ({name} is not a JSON number)")

    def number(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise CompareError(f"{source}: not valid JSON ({digits} is not a finite number)")
        return value

    try:
        document = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_int=integer,
            parse_float=number,
            parse_constant=constant,
        )
    except json.JSONDecodeError as exc:
        raise CompareError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise CompareError(f"{source}: not valid JSON (nested too deeply)") from None
    check_strings(document, source)
    return document


def load_yaml(path: Path, *, limit: int = MAX_INPUT_BYTES) -> Any:
    """Read and parse a one-document YAML file."""
    return parse_yaml(read_text(path, limit=limit), str(path))
