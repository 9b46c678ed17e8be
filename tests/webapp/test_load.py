"""Loading WebApp manifests: valid files load, every bad one fails with one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compare.errors import CompareError
from compare.webapp import DEFAULT_APP, load_webapp, parse_webapp

VALID = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop"},
    "spec": {"replicas": 2, "image": "registry.local:5000/team/shop:1.4", "port": 9000},
}


def _write(tmp_path: Path, data: object, name: str = "app.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def _with_spec(**spec: object) -> dict[str, object]:
    merged = {**VALID["spec"], **spec}  # type: ignore[dict-item]
    return {**VALID, "spec": {k: v for k, v in merged.items() if v is not None}}


def test_default_example_loads() -> None:
    webapp = load_webapp()
    assert webapp.name == "webapp-demo"
    assert (webapp.spec.replicas, webapp.spec.image, webapp.spec.port) == (3, "myapp:v1", 8080)
    assert [(v.name, v.value) for v in webapp.spec.env] == [("LOG_LEVEL", "info")]
    assert load_webapp(DEFAULT_APP) == webapp


def test_valid_file_loads_with_defaults(tmp_path: Path) -> None:
    data = {**VALID, "spec": {"image": "myapp:v2"}}
    webapp = load_webapp(_write(tmp_path, data))
    assert (webapp.spec.replicas, webapp.spec.port, webapp.spec.env) == (1, 8080, [])


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_with_spec(image=None), "spec.image: required field is missing"),
        (_with_spec(replicas=-1), "spec.replicas: Input should be greater than or equal to 0"),
        (_with_spec(port=0), "spec.port: Input should be greater than or equal to 1"),
        (_with_spec(port=70000), "spec.port: Input should be less than or equal to 65535"),
        (_with_spec(replica=3), "spec.replica: unknown field"),
        (_with_spec(image="Bad Image"), "spec.image: 'Bad Image' is not a valid image reference"),
        (_with_spec(replicas="three"), "spec.replicas: Input should be a valid integer"),
        (
            _with_spec(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
            "spec.env: duplicate env name 'A'",
        ),
        (_with_spec(env=[{"name": "1X"}]), "spec.env[0].name: String should match pattern"),
        (_with_spec(replicas=51), "spec.replicas: 51 exceeds the ceiling of 50"),
        (_with_spec(env=[{"name": "PORT"}]), "spec.env: 'PORT' is reserved by the platform"),
        ({**VALID, "kind": "Deployment"}, "kind: String should match pattern"),
        ({**VALID, "metadata": {"name": "Shop_1"}}, "metadata.name: String should match pattern"),
        ({k: v for k, v in VALID.items() if k != "spec"}, "spec: required field is missing"),
    ],
)
def test_bad_manifest_is_one_line_naming_file_and_field(
    tmp_path: Path, data: object, expected: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(CompareError) as err:
        load_webapp(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {expected}"), message
    assert "\n" not in message
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "spec: [unclosed\n",
            "not valid YAML at line 2, column 1 (expected ',' or ']', but got '<stream end>')",
        ),
        (
            "kind: WebApp\n  bad: indent\n",
            "not valid YAML at line 2, column 6 (mapping values are not allowed here)",
        ),
        ("- a\n- b\n", "expected a WebApp mapping, got list"),
        ("", "expected a WebApp mapping, got NoneType"),
    ],
)
def test_malformed_file_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(CompareError) as err:
        load_webapp(path)
    assert str(err.value) == f"{path}: {expected}"


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(CompareError, match=r"nope\.yaml: no such file"):
        load_webapp(path)


def test_parse_names_its_source() -> None:
    with pytest.raises(CompareError, match=r"^cluster CR: spec\.image: required field"):
        parse_webapp(_with_spec(image=None), source="cluster CR")
