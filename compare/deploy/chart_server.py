"""The toolkit's local Helm repository, served to source-controller on 127.0.0.1.

Its root holds charts/webapp (the built-in flux approach's chart, packaged when the chart
server starts). A target file's local chart directory is published under `targets/<digest>/`,
a repository of its own named by a digest of the directory's content: two charts of the same
name and version (two targets, or one chart edited without a version bump) never share an
index, and an unchanged chart is packaged once. Every repository is written beside its final
place and renamed into it, so the chart server never serves a half-written index. The server
is Python's `http.server` on 127.0.0.1, as a team serves charts from any static web server.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import uuid
from pathlib import Path

from compare.deploy.charts import CHART_DIR
from compare.deploy.install import run_tool
from compare.deploy.processes import LocalProcess, spawn

TARGETS_DIR = "targets"
CHART_SERVER = "chart-server"


def package_repository(charts: list[Path], repo: Path, url: str) -> None:
    """`helm package` each chart + `helm repo index`: a Helm repository directory at `repo`
    whose index names `url` (replacing whatever was there)."""
    tmp = repo.with_name(f"{repo.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    try:
        for chart in charts:
            run_tool("helm", "package", str(chart), "--destination", str(tmp))
        run_tool("helm", "repo", "index", str(tmp), "--url", url)
        shutil.rmtree(repo, ignore_errors=True)
        tmp.replace(repo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def serve_charts(directory: Path, port: int) -> LocalProcess:
    """Package charts/webapp into `directory`/repo and start the chart server on it (its URL
    `http://127.0.0.1:<port>`)."""
    url, repo = f"http://127.0.0.1:{port}", directory / "repo"
    package_repository([CHART_DIR], repo, url)
    args = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return spawn(
        directory,
        CHART_SERVER,
        [*args, "--directory", str(repo)],
        marker="http.server",
        ready_url=f"{url}/index.yaml",
    )


def chart_digest(chart: Path) -> str:
    """A digest of every file of a chart directory (names and content), 16 hex digits."""
    digest = hashlib.sha256()
    for path in sorted(p for p in chart.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(chart)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def publish_chart(root: Path, base_url: str, chart: Path) -> str:
    """Publish a chart directory in the repository served from `root` (at `base_url`);
    returns the URL of the repository that holds it."""
    path = f"{TARGETS_DIR}/{chart_digest(chart)}"
    url = f"{base_url}/{path}"
    repo = root / path
    if not (repo / "index.yaml").is_file():
        repo.parent.mkdir(parents=True, exist_ok=True)
        # Trials deploy the same chart at once: each packages beside, the first rename wins.
        tmp = repo.with_name(f"{repo.name}.tmp-{uuid.uuid4().hex[:8]}")
        tmp.mkdir()
        try:
            run_tool("helm", "package", str(chart), "--destination", str(tmp))
            run_tool("helm", "repo", "index", str(tmp), "--url", url)
            try:
                os.rename(tmp, repo)
            except OSError:
                if not (repo / "index.yaml").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return url
