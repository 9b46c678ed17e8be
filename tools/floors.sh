#!/usr/bin/env bash
# Proves the lower bounds in pyproject.toml: installs every direct dependency (and the dev
# extras) at the LOWEST version its bound allows, then runs the unit tests against that.
#
#   bash tools/floors.sh        (or `make floors`)
#
# - The environment is .venv-floors/ (gitignored), kept between runs. It is rebuilt from
#   scratch whenever pyproject.toml or the Python version changes, so no package left over
#   from older floors can hide or cause a failure.
# - uv's `--resolution lowest-direct` picks the lowest allowed version of each direct
#   dependency (the transitive ones get their newest allowed versions, as a user would).
# - Every direct dependency must then be installed at exactly its declared floor: a floor that
#   the other floors make unreachable (e.g. `rich>=13` while typer needs rich>=13.8) is not
#   proven by this run, so it fails and asks for the real floor.
# - Only the package index is needed (for uv itself and the packages); no cluster, no Go.
#   PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-floors
STAMP=$VENV/.floors-installed

say() { echo ">> floors: $*"; }

# 1. A fresh environment when pyproject.toml or the interpreter changed since the last install.
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $("$PYTHON" -c 'import sys; print(sys.version)')"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/uv" ]; then
    say "$VENV is up to date with pyproject.toml (delete it to reinstall)"
else
    say "creating $VENV with $("$PYTHON" --version)"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    # 2. uv, inside the same environment (pip is all a fresh venv has).
    say "installing uv into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check 'uv>=0.5,<1'
    # 3. The project (editable) with its dev extras, every direct dependency at its floor.
    say "installing -e '.[dev]' with --resolution lowest-direct"
    "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" \
        --resolution lowest-direct -e '.[dev]'
    echo "$want" >"$STAMP"
fi

# 4. Each direct dependency must sit exactly on its declared lower bound (see the header).
say "checking that every direct dependency is installed at its lower bound"
"$VENV/bin/python" - <<'EOF'
import sys
import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement  # pytest depends on packaging
from packaging.version import Version

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
failed = []
for line in project["dependencies"] + project["optional-dependencies"]["dev"]:
    req = Requirement(line)
    installed = Version(version(req.name))
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    if not floors:
        print(f"   {req.name:<26} {installed}  (no lower bound)")
        continue
    ok = installed == floors[0]
    print(f"   {req.name:<26} {installed}  (bound >={floors[0]}){'' if ok else '  <-- NOT the bound'}")
    if not ok:
        failed.append(f"{req.name}: >={floors[0]} is declared, but the lowest version the other"
                      f" floors allow is {installed}; raise the bound to it")
if failed:
    print("\n".join(["floors: the declared bound is not the tested one:", *failed]), file=sys.stderr)
    sys.exit(1)
EOF

# 5. The unit tests. Besides `-m "not cluster"` (those need a running cluster), the tests below
#    run the Go-built helm/kubectl (tools/build.sh, minutes on a cold cache) and are left out so
#    that this check needs neither Go nor the binary cache; `make test` runs them all.
deselect=(
    # renders and lints charts/webapp with the built helm binary
    --deselect tests/deploy/helm/test_chart.py
    # `helm template`/`helm lint` of the operator's chart and `kubectl kustomize` of its config
    --deselect tests/webapp_operator/test_deployment_manifests.py
    # compares the helm-rendered workload with the operator's, so it renders with helm too
    --deselect tests/webapp_operator/test_parity.py
    # `compare cluster up` builds (or finds) the control-plane binaries before the checks
    # these two tests look at
    --deselect tests/cluster/test_cluster_cli.py::test_port_in_use_is_reported_in_one_line
    --deselect tests/cluster/test_cluster_cli.py::test_stale_cluster_directory_is_reported_and_down_clears_it
)
say "running the unit tests on the floors: pytest -m 'not cluster' ${deselect[*]}"
exec "$VENV/bin/python" -m pytest -m "not cluster" -p no:cacheprovider "${deselect[@]}"
