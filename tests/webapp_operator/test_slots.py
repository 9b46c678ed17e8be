"""Reconcile slots: no more reconciles hold their inputs at once than the executor has
threads; a daemon without a slot waits holding nothing (pure asyncio, no cluster)."""

from __future__ import annotations

import asyncio
from typing import cast

from webapp_operator.handlers import Controller
from webapp_operator.reconciler import Reconciler


def test_no_more_reconciles_hold_a_slot_than_the_concurrency() -> None:
    controller = Controller(reconciler=cast(Reconciler, object()), concurrency=2)
    holding: list[int] = []
    peak = 0

    async def reconcile(n: int) -> None:
        nonlocal peak
        async with controller.slot():
            holding.append(n)  # where the daemon takes its snapshot
            peak = max(peak, len(holding))
            await asyncio.sleep(0.01)
            holding.remove(n)

    async def burst() -> None:
        await asyncio.gather(*(reconcile(n) for n in range(10)))

    asyncio.run(burst())
    assert peak == 2 and holding == []


def test_without_a_concurrency_nothing_waits() -> None:
    controller = Controller(reconciler=cast(Reconciler, object()))
    peak = 0
    holding = 0

    async def reconcile() -> None:
        nonlocal peak, holding
        async with controller.slot():
            holding += 1
            peak = max(peak, holding)
            await asyncio.sleep(0.01)
            holding -= 1

    async def burst() -> None:
        await asyncio.gather(*(reconcile() for _ in range(10)))

    asyncio.run(burst())
    assert peak == 10
