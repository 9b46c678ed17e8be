"""`compare` imports a command's module only when that command runs: the cluster commands and
the help never load the kubernetes client, the run engine or the deploy paths (issue 28:
their ~0.5 s came before every `compare cluster up`)."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cli.app import COMMANDS
from compare.cluster import ClusterTarget
from tests.conftest import TEST_CLUSTER

# Heavy for a start, and needed by none of the commands checked here.
NOT_AT_START = ("kubernetes", "chaoslib", "pyhelm3", "kopf", "compare.run", "compare.deploy")

_SCRIPT = """
import json, sys
from compare.cli import main
sys.argv = ["compare", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _imported(*args: str) -> list[str]:
    """The heavy modules `compare ARGS` imported, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    return sorted(
        m for m in modules if any(m == top or m.startswith(f"{top}.") for top in NOT_AT_START)
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["cluster", "--help"],
        ["cluster", "up", "--help"],
        ["cluster", "kubeconfig", "--name", "startup-probe"],
        ["cluster", "status", "--name", "startup-probe"],
    ],
    ids=" ".join,
)
def test_the_cluster_commands_and_the_help_import_nothing_heavy(args: list[str]) -> None:
    assert _imported(*args) == []


def test_a_command_that_needs_the_client_still_gets_it() -> None:
    """The check above can fail: `compare deploy --help` loads every approach's module."""
    assert "kubernetes" in _imported("deploy", "--help")


@pytest.mark.cluster
def test_cluster_up_on_a_running_cluster_imports_nothing_heavy(cluster: ClusterTarget) -> None:
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    assert _imported("cluster", "up", "--name", TEST_CLUSTER) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listing_says_what_each_command_says_of_itself(name: str) -> None:
    command = COMMANDS[name].load(name)
    first_paragraph = inspect.cleandoc(command.help or "").split("\n\n")[0]
    assert COMMANDS[name].summary == first_paragraph


def test_every_command_is_listed_and_runs_its_own_help() -> None:
    listing = CliRunner().invoke(app, ["--help"])
    assert listing.exit_code == 0, listing.output
    for name in COMMANDS:
        assert name in listing.output
        own = CliRunner().invoke(app, [name, "--help"])
        assert own.exit_code == 0, own.output
        assert re.search(rf"Usage: \S+ {name} ", own.output), own.output
