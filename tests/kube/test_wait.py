"""The one deadline loop (`compare.kube.wait`) and the DNS-label rule: pure, no cluster."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from compare.errors import EXIT_FAILED, EXIT_USAGE, CompareError
from compare.kube import (
    DNS_LABEL,
    Deadline,
    WaitCancelled,
    check_namespace_name,
    is_dns_label,
    poll,
    wait_for,
    wait_until_gone,
)


def counter(done_at: int) -> tuple[list[int], Callable[[], int]]:
    looks: list[int] = []

    def look() -> int:
        looks.append(len(looks) + 1)
        return looks[-1] if looks[-1] >= done_at else 0

    return looks, look


def test_wait_for_returns_the_first_look_that_is_done() -> None:
    looks, look = counter(3)
    found = wait_for(look, deadline=5.0, timed_out=lambda _: AssertionError(), interval=0.0)
    assert found == 3
    assert looks == [1, 2, 3]


def test_wait_for_raises_the_callers_error_built_from_the_last_look() -> None:
    seen: list[str] = []

    def timed_out(last: str) -> CompareError:
        seen.append(last)
        return CompareError(f"still {last}", exit_code=EXIT_FAILED)

    started = time.monotonic()
    with pytest.raises(CompareError, match=r"^still pending$") as raised:
        wait_for(
            lambda: "pending",
            deadline=0.2,
            done=lambda look: look == "ready",
            timed_out=timed_out,
            interval=0.05,
        )
    assert raised.value.exit_code == EXIT_FAILED
    assert seen == ["pending"]
    assert time.monotonic() - started >= 0.2


def test_a_look_is_taken_even_with_no_time_left() -> None:
    assert wait_for(lambda: "x", deadline=0.0, timed_out=lambda _: AssertionError()) == "x"
    assert poll(lambda: 0, deadline=Deadline(-1.0)) == (False, 0)


def test_a_deadline_counts_from_its_start() -> None:
    spent = Deadline(10.0, started=time.monotonic() - 9.95)
    assert not spent.passed()
    assert 0.0 < spent.remaining() <= 0.05
    assert spent.remaining(1.0) == 1.0
    assert spent.elapsed() >= 9.95
    time.sleep(0.06)
    assert spent.passed()
    with pytest.raises(CompareError, match="10s"):
        wait_for(
            lambda: False,
            deadline=spent,
            timed_out=lambda _: CompareError(f"not within {spent.timeout:.0f}s"),
        )


def test_a_failure_in_a_look_ends_the_wait_at_once() -> None:
    def look() -> bool:
        raise CompareError("exited during start-up")

    with pytest.raises(CompareError, match="exited"):
        wait_for(look, deadline=30.0, timed_out=lambda _: AssertionError())


def test_the_cancel_event_cuts_a_wait_short() -> None:
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(WaitCancelled, match=r"^Deployment ns/web: cancelled$"):
        wait_for(
            lambda: False,
            deadline=30.0,
            timed_out=lambda _: AssertionError(),
            interval=0.05,
            cancel=cancel,
            what="Deployment ns/web",
        )
    assert time.monotonic() - started < 5.0


def test_wait_until_gone_names_what_is_left() -> None:
    left = [["Deployment web", "Service web"], ["Service web"], []]
    wait_until_gone(
        lambda: left.pop(0), deadline=5.0, timed_out=lambda _: AssertionError(), interval=0.0
    )
    assert left == []
    with pytest.raises(CompareError, match=r"^Service web still present$"):
        wait_until_gone(
            lambda: ["Service web"],
            deadline=0.0,
            timed_out=lambda still: CompareError(f"{', '.join(still)} still present"),
        )


@pytest.mark.parametrize("name", ["a", "web-1", "0abc", "a" * 63])
def test_dns_labels(name: str) -> None:
    assert is_dns_label(name)
    check_namespace_name(name)


@pytest.mark.parametrize("name", ["", "Bad_NS", "-a", "a-", "a.b", "a" * 64])
def test_not_dns_labels(name: str) -> None:
    assert not is_dns_label(name)
    with pytest.raises(CompareError, match="must be a DNS label") as raised:
        check_namespace_name(name)
    assert raised.value.exit_code == EXIT_USAGE


def test_the_dns_label_pattern_is_written_once() -> None:
    """Every DNS-label check (models, schemas, deploy) uses `compare.kube.DNS_LABEL`."""
    root = Path(__file__).resolve().parents[2]
    sources = [*root.glob("compare/**/*.py"), *root.glob("operator/webapp_operator/**/*.py")]
    written = [str(path.relative_to(root)) for path in sources if DNS_LABEL in path.read_text()]
    assert written == ["compare/kube/namespace.py"]


def test_the_webapp_model_uses_the_one_pattern() -> None:
    from compare.webapp.spec import Metadata

    namespace = Metadata.model_json_schema()["properties"]["namespace"]
    patterns = [namespace.get("pattern")] + [o.get("pattern") for o in namespace.get("anyOf", [])]
    assert DNS_LABEL in patterns
