"""`newest`: the reading judged when a full list and the watch cache disagree is, per object,
the newer of the two, so a list older than events received while it was read never undoes
them."""

from __future__ import annotations

from typing import Any

from compare.judge import Reading
from compare.run.observe import newest


def _pod(name: str, version: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "resourceVersion": str(version)},
        "status": {"phase": phase},
    }


def test_the_newer_of_list_and_cache_wins_per_object() -> None:
    listed = Reading(
        10.0,
        {"Pod": {"a": _pod("a", 5, "Pending"), "b": _pod("b", 9)}},
        {"Pod": "9"},
    )
    cached = Reading(11.0, {"Pod": {"a": _pod("a", 7), "b": _pod("b", 4, "Pending")}})
    both = newest(listed, cached, {})
    assert both.at == 11.0  # the cache's time: ordered with the events it holds
    assert both.get("Pod", "a") == _pod("a", 7)  # the cache is newer: kept
    assert both.get("Pod", "b") == _pod("b", 9)  # the watch missed it: from the list


def test_missed_creations_and_deletions_are_taken_from_the_list() -> None:
    listed = Reading(10.0, {"Pod": {"new": _pod("new", 8)}}, {"Pod": "8"})
    cached = Reading(
        11.0,
        {"Pod": {"old": _pod("old", 3), "later": _pod("later", 12)}},
    )
    both = newest(listed, cached, {"Pod": {}})
    # Created and never delivered: listed. Deleted and never delivered: gone. Created after
    # the list: kept.
    assert set(both.objects["Pod"]) == {"new", "later"}


def test_an_object_the_watch_saw_deleted_after_the_list_stays_deleted() -> None:
    listed = Reading(10.0, {"Pod": {"a": _pod("a", 5)}}, {"Pod": "5"})
    cached = Reading(11.0, {"Pod": {}})
    assert newest(listed, cached, {"Pod": {"a": "6"}}).get("Pod", "a") is None
    # Deleted before the version the list shows (then re-created): the list's object is back.
    assert newest(listed, cached, {"Pod": {"a": "4"}}).get("Pod", "a") == _pod("a", 5)
