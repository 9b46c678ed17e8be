"""A Secret's values as the judge holds them: a hash of each, never the value.

The judge compares a Secret's `data` closed-world like any field, but on `sha256:<hex>` of each
decoded value: a changed, removed or added key is drift and its message names the key, while
the value itself is never printed, kept in a reading, a desired object or a cache. `stringData`
is folded into `data` as the API server does (it wins over `data` for the same key), so a chart
that writes `stringData` is judged against the stored `data`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from typing import Any

PREFIX = "sha256:"
_HASHED = re.compile(r"^sha256:[0-9a-f]{64}$")  # never base64 (which has no ':')


def digest(value: bytes) -> str:
    return PREFIX + hashlib.sha256(value).hexdigest()


def hashed_secret(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object with a Secret's values replaced by their hashes (other kinds as they are).

    Idempotent: a value that is already a hash stays as it is."""
    if obj.get("kind") != "Secret" or not ({"data", "stringData"} & set(obj)):
        return dict(obj)
    out = {key: value for key, value in obj.items() if key not in ("data", "stringData")}
    data: dict[str, Any] = {}
    for key, value in (obj.get("data") or {}).items():
        data[key] = _hash_encoded(value)
    for key, value in (obj.get("stringData") or {}).items():
        data[key] = (
            value
            if isinstance(value, str) and _HASHED.match(value)
            else digest(str(value).encode())
        )
    if data or "data" in obj:
        out["data"] = data
    return out


def _hash_encoded(value: Any) -> str:
    if not isinstance(value, str):
        return digest(repr(value).encode())
    if _HASHED.match(value):
        return value
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        decoded = value.encode()  # not base64: the API server would refuse it; hash as given
    return digest(decoded)
