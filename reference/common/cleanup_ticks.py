"""What the bootstrap server's cleanup waits on between rounds: its own timer, or a shared beat.

Upstream's `_cleanup_expired_entries` sleeps its interval (120 s), then expires old
`room_to_dp_rank` entries. `SleepTicks` is that, and the server's default. A task in
`asyncio.sleep` is held by the loop's timer heap (the timer holds the sleep's future,
the future holds the task's wakeup), so even a bare cleanup task is never collectable:
upstream's task-refs bug (PR #33048) was latent here too (the collectability table of
lesson `task-refs`, `reference/lessons/task_refs/collectable.py`, measures it).

`Metronome` is the configuration lesson `task-refs` uses to make the fix observable,
the counterpart of the dispatcher's `ExitNotices(hold_waiters=False)`: one loop timer
shared by the periodic jobs of a process, beating every `interval`, that wakes the
jobs waiting for the next beat. With `hold_waiters=False` it holds them weakly, as an
event bus does so that a job that went away needs no unsubscribe. The loop's timer
then reaches only the metronome, not the waiter: a waiting cleanup is parked on an
`asyncio.Event` that only its own frame references, exactly the await that leaves a
bare task collectable. It arms its timer when a job starts waiting and beats once, so
rounds come exactly when the job's own sleep would end: the server behaves the same
whichever it is given, until a collection finds the waiter.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import MutableSet
from typing import Protocol


class Ticks(Protocol):
    interval: float

    async def next_tick(self) -> None:
        """Return at the next cleanup round (`interval` seconds of loop time from now)."""
        ...


class SleepTicks:
    """Upstream: each round sleeps the interval on the loop's own timer."""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    async def next_tick(self) -> None:
        await asyncio.sleep(self.interval)


class Metronome:
    """One shared timer; its waiters held strongly (default) or weakly (an event bus)."""

    def __init__(self, interval: float, *, hold_waiters: bool = True) -> None:
        self.interval, self.hold_waiters = interval, hold_waiters
        self._waiters: MutableSet[asyncio.Event] = set() if hold_waiters else weakref.WeakSet()
        self._beat: asyncio.TimerHandle | None = None
        self.beats = 0

    @property
    def waiting(self) -> int:
        """Jobs waiting for the next beat (with weak waiters: only those still alive)."""
        return len(self._waiters)

    async def next_tick(self) -> None:
        waiter = asyncio.Event()
        self._waiters.add(waiter)
        if self._beat is None:
            self._beat = asyncio.get_running_loop().call_later(self.interval, self._tick)
        try:
            await waiter.wait()
        finally:
            self._waiters.discard(waiter)

    def _tick(self) -> None:
        self._beat = None
        self.beats += 1
        for waiter in list(self._waiters):
            waiter.set()
