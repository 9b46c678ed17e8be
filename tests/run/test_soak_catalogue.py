"""The soak benchmark's faults (`bench/operator_soak.py`) are the catalogue's, selected and
configured as a run would: every `${key}` of every action resolves for a WebApp. (Until
2026-12-04 the soak substituted only the WebApp's name and namespace; once the catalogue named
its targets through `${webapp_workload}`, `${webapp_service}`, ... every injection was an API
error, and a soak reported 0 faults injected.) No cluster."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

import pytest

from compare.run.experiments import load_experiments
from tests.helpers import bench_module


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    return bench_module("operator_soak")


def test_every_fault_resolves_for_a_webapp(
    soak: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = soak.catalogue()
    # Every single-action experiment of a WebApp's Deployment and Service: none left out
    # because its arguments name parts through configuration.
    names = {f.name for f in faults}
    assert {"image-change", "service-port-change", "replicaset-delete", "pod-delete-one"} <= names
    builtin = {s.name for s in load_experiments()}
    assert names <= builtin
    webapp = soak.webapps(3)[2]
    sent: list[tuple[str, dict[str, object]]] = []
    for fault in faults:
        module = importlib.import_module(fault.module)
        monkeypatch.setattr(module, fault.func, lambda _f=fault, **kw: sent.append((_f.name, kw)))
        fault.inject(webapp, "soak-ns")
    assert len(sent) == len(faults)
    for name, arguments in sent:
        text = json.dumps(arguments)
        assert "${" not in text, (name, arguments)
    by_name = dict(sent)
    assert "soak-ns" in json.dumps(by_name["image-change"])
    assert webapp.name in json.dumps(by_name["service-port-change"])


def test_an_unresolved_key_stops_the_soak(soak: ModuleType) -> None:
    fault = soak.Fault("broken", "json", "dumps", {"obj": "${nobody_sets_this}"}, {})
    with pytest.raises(SystemExit, match=r"broken: no configuration value for \$\{nobody"):
        fault.inject(soak.webapps(1)[0], "ns")
