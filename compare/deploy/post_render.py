"""Helm's post-render step, for leaving named objects out of a release (`dropUnservedWebhooks`).

Helm 4 runs a post-renderer only as a plugin (`--post-renderer NAME`, a `postrenderer/v1`
plugin found on HELM_PLUGINS), and pyhelm3 passes neither the flag nor an environment. So the
toolkit writes, once per set of objects to drop, a directory holding:

- `plugins/compare-drop/`: the plugin, running `filter.py` with this interpreter; it reads the
  rendered manifest on stdin and writes it back without the documents whose `Kind/name` it is
  given, every other document byte for byte (never re-serialised);
- `helm`: a wrapper pyhelm3 runs as its helm executable: `helm upgrade` gets
  `--post-renderer compare-drop` and the objects as `--post-renderer-args`, with the plugin's
  directory first on HELM_PLUGINS; every other command is helm as it is.

Helm stores the post-rendered manifest as the release's, so what the judge reads back (the
release's manifest) has no dropped object either.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compare.paths import cache_dir

PLUGIN = "compare-drop"

_PLUGIN_YAML = """\
apiVersion: v1
type: postrenderer/v1
name: {name}
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: {python}
      args: [{filter}]
"""

# Documents are split on Helm's own separator lines and matched by their kind and name only;
# what is kept is written as Helm rendered it.
_FILTER = '''\
"""Written by compare (compare.deploy.post_render): drop the documents named Kind/name."""
import sys

import yaml

drop = set(sys.argv[1:])
text = sys.stdin.read()
docs, current = [], []
for line in text.splitlines(keepends=True):
    if line.rstrip() == "---":
        docs.append("".join(current))
        current = []
    current.append(line)
docs.append("".join(current))
out = []
for doc in docs:
    body = doc.partition("\\n")[2] if doc.startswith("---") else doc
    try:
        obj = yaml.safe_load(body)
    except yaml.YAMLError:
        obj = None
    if isinstance(obj, dict):
        name = (obj.get("metadata") or {}).get("name")
        if f"{obj.get('kind')}/{name}" in drop:
            continue
    out.append(doc)
sys.stdout.write("".join(out))
'''

_WRAPPER = """\
#!/bin/sh
# Written by compare (compare.deploy.post_render): helm upgrade with the toolkit's post-renderer.
if [ "$1" = upgrade ]; then
  HELM_PLUGINS={plugins}${{HELM_PLUGINS:+:$HELM_PLUGINS}}
  export HELM_PLUGINS
  exec {helm} "$@" --post-renderer {plugin}{args}
fi
exec {helm} "$@"
"""


def dropping_helm(helm: str, drop: Sequence[str]) -> Path:
    """The helm executable (a wrapper of `helm`) whose `upgrade` leaves the objects `drop`
    names (`Kind/name`) out of the release; written once per (helm, drop)."""
    args = "".join(f" --post-renderer-args {shlex.quote(ref)}" for ref in drop)
    key = hashlib.sha256(f"{helm}\0{sys.executable}\0{args}".encode()).hexdigest()[:16]
    root = cache_dir() / "post-render" / key
    wrapper = root / "helm"
    if wrapper.exists():
        return wrapper
    plugin = root / "plugins" / PLUGIN
    plugin.mkdir(parents=True, exist_ok=True)
    _write(plugin / "filter.py", _FILTER)
    _write(
        plugin / "plugin.yaml",
        _PLUGIN_YAML.format(
            name=PLUGIN, python=_json(sys.executable), filter=_json(str(plugin / "filter.py"))
        ),
    )
    script = _WRAPPER.format(
        plugins=shlex.quote(str(root / "plugins")), helm=shlex.quote(helm), plugin=PLUGIN, args=args
    )
    _write(wrapper, script, mode=0o755)  # last: its presence says the rest is there
    return wrapper


def _json(text: str) -> str:
    # A YAML flow scalar that holds any path: JSON's string syntax is YAML's double-quoted one.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Written whole or not at all (another process may write the same file meanwhile)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
