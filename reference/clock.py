"""Injectable time for components that sleep or time out.

Upstream's heartbeat sleeps 5 s between probes and its timeouts are 300 s. Tests must
not wait that out, and must not use sleeps to order events, so every component takes
a `Clock`. `RealClock` is wall time. `VirtualClock` is a discrete-event clock: threads
park in `wait()` on a virtual deadline and `advance()` wakes them in deadline order,
returning only once every woken thread has parked again or exited. A heartbeat round
therefore runs to completion inside `advance()`, deterministically.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Sleep `seconds` unless `stop` is set first; return whether it was set."""
        ...

    def interrupt(self) -> None:
        """Wake every waiter so that it re-checks its stop event."""
        ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(seconds)

    def interrupt(self) -> None:
        """`Event.wait` already wakes when the event is set."""


class SettleTimeout(RuntimeError):
    """A woken thread did not park again or exit within the real-time bound."""


class VirtualClock:
    def __init__(self, start: float = 0.0, settle_timeout: float = 5.0) -> None:
        self._now = start
        self._settle_timeout = settle_timeout
        self._cond = threading.Condition()
        self._deadlines: dict[threading.Thread, float] = {}

    def now(self) -> float:
        return self._now

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        me = threading.current_thread()
        with self._cond:
            deadline = self._now + seconds
            self._deadlines[me] = deadline
            self._cond.notify_all()
            while not stop.is_set() and self._now < deadline:
                self._cond.wait()
            del self._deadlines[me]
            self._cond.notify_all()
            return stop.is_set()

    def interrupt(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def sleepers(self) -> int:
        with self._cond:
            return len(self._deadlines)

    def wait_for_sleepers(self, count: int) -> None:
        """Block (bounded) until `count` threads are parked, e.g. after `start()`."""
        end = time.monotonic() + self._settle_timeout
        with self._cond:
            while len(self._deadlines) < count:
                if not self._cond.wait(end - time.monotonic()):
                    raise SettleTimeout(f"only {len(self._deadlines)} of {count} threads parked")

    def advance(self, seconds: float) -> None:
        """Move time forward, waking due waiters one deadline at a time."""
        with self._cond:
            target = self._now + seconds
            while True:
                due = [d for d in self._deadlines.values() if d <= target]
                if not due:
                    break
                self._now = max(self._now, min(due))
                woken = [t for t, d in self._deadlines.items() if d <= self._now]
                self._cond.notify_all()
                self._settle(woken)
            self._now = target

    def _settle(self, woken: list[threading.Thread]) -> None:
        end = time.monotonic() + self._settle_timeout
        while not all(self._parked_or_gone(t) for t in woken):
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise SettleTimeout("a woken thread neither parked again nor exited")
            # A thread that dies cannot notify; re-check its liveness now and then.
            self._cond.wait(min(remaining, 0.005))

    def _parked_or_gone(self, thread: threading.Thread) -> bool:
        deadline = self._deadlines.get(thread)
        if deadline is not None:
            return deadline > self._now
        return not thread.is_alive()
