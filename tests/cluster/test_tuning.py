"""The control plane's flags: the throughput tuning, kwokctl's defaults, and overrides."""

from __future__ import annotations

import pytest
import yaml

from compare.cluster.embedded import (
    ARGS_ENV,
    THROUGHPUT_ARGS,
    TUNING_ENV,
    ControlPlaneArg,
    control_plane_args,
    kwokctl_config,
    parse_control_plane_args,
)
from compare.errors import CompareError


def patches(config_text: str) -> dict[str, dict[str, str]]:
    """component -> {flag: value} as kwokctl reads the configuration (last value wins); an
    environment variable NAME as `env:NAME`."""
    config = yaml.safe_load(config_text)
    assert config["kind"] == "KwokctlConfiguration"
    assert config["options"]["bindAddress"] == "127.0.0.1"
    out: dict[str, dict[str, str]] = {}
    for patch in config.get("componentsPatches") or []:
        assert set(patch) <= {"name", "extraArgs", "extraEnvs"}, patch
        for extra in patch.get("extraArgs", []):
            out.setdefault(patch["name"], {})[extra["key"]] = extra["value"]
        for env in patch.get("extraEnvs", []):
            out.setdefault(patch["name"], {})[f"env:{env['name']}"] = env["value"]
    return out


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TUNING_ENV, raising=False)
    monkeypatch.delenv(ARGS_ENV, raising=False)


def test_default_configuration_carries_the_throughput_flags() -> None:
    flags = patches(kwokctl_config(control_plane_args()))
    kcm, scheduler = flags["kube-controller-manager"], flags["kube-scheduler"]
    # kube-controller-manager's own defaults are 20/30 and 5 syncs, the scheduler's 50/100.
    assert float(kcm["kube-api-qps"]) > 20 and int(kcm["kube-api-burst"]) > 30
    assert int(kcm["concurrent-deployment-syncs"]) > 5
    assert int(kcm["concurrent-replicaset-syncs"]) > 5
    assert float(scheduler["kube-api-qps"]) > 50 and int(scheduler["kube-api-burst"]) > 100
    assert all(arg.reason for arg in THROUGHPUT_ARGS), "every tuned value says why"


def test_kwokctl_tuning_adds_no_flag() -> None:
    assert control_plane_args("kwokctl") == ()
    assert patches(kwokctl_config(control_plane_args("kwokctl"))) == {}


def test_an_override_replaces_the_tuned_value_and_keeps_the_rest() -> None:
    override = parse_control_plane_args(
        ["kube-controller-manager:--kube-api-qps=123", "kube-apiserver:v=2"], source="--arg"
    )
    flags = patches(kwokctl_config(control_plane_args("throughput", override)))
    assert flags["kube-controller-manager"]["kube-api-qps"] == "123"
    assert flags["kube-apiserver"]["v"] == "2"
    tuned = patches(kwokctl_config(THROUGHPUT_ARGS))
    assert flags["kube-scheduler"] == tuned["kube-scheduler"]
    assert (
        flags["kube-controller-manager"]["concurrent-deployment-syncs"]
        == tuned["kube-controller-manager"]["concurrent-deployment-syncs"]
    )
    # One value per flag: the override is not appended next to the tuned one.
    kcm = "kube-controller-manager"
    qps = [a for a in control_plane_args("throughput", override) if a.flag == "kube-api-qps"]
    assert [a for a in qps if a.component == kcm] == [
        ControlPlaneArg(kcm, "kube-api-qps", "123", "set by --arg")
    ]


def test_the_environment_picks_the_tuning_and_the_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TUNING_ENV, "kwokctl")
    monkeypatch.setenv(ARGS_ENV, "kube-scheduler:kube-api-qps=77, kube-scheduler:kube-api-burst=99")
    assert patches(kwokctl_config(control_plane_args())) == {
        "kube-scheduler": {"kube-api-qps": "77", "kube-api-burst": "99"}
    }


def test_an_env_override_is_an_environment_variable_not_a_flag() -> None:
    override = parse_control_plane_args("etcd:env:GOGC=50 etcd:quota-backend-bytes=1", source="x")
    assert [a.env for a in override] == ["GOGC", None]
    config = yaml.safe_load(kwokctl_config(control_plane_args("kwokctl", override)))
    assert config["componentsPatches"] == [
        {
            "name": "etcd",
            "extraEnvs": [{"name": "GOGC", "value": "50"}],
            "extraArgs": [{"key": "quota-backend-bytes", "value": "1"}],
        }
    ]


@pytest.mark.parametrize(
    "item",
    [
        "kube-controller-manager",
        "kcm:kube-api-qps=1",
        "kube-scheduler:=1",
        "etcd:quota",
        "etcd:env:=1",
    ],
)
def test_a_malformed_override_is_a_one_line_error_naming_its_source(item: str) -> None:
    with pytest.raises(CompareError, match=f"^{ARGS_ENV}: .*COMPONENT:FLAG=VALUE") as err:
        parse_control_plane_args(item, source=ARGS_ENV)
    assert "\n" not in str(err.value)


def test_an_unknown_tuning_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TUNING_ENV, "fastest")
    with pytest.raises(CompareError, match="unknown cluster tuning 'fastest'"):
        control_plane_args()
