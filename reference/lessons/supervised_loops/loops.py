"""A component's background loops, found by what it started, and faults injected where they wait.

The checks of lesson `supervised-loops` hold for *every* long-lived loop a component
starts, so they must not work from a list of names. A loop here is found as what runs:
each pending task of the component's event loop is a chain of coroutines (the task's
coroutine, what it awaits, and so on down to the future it waits on); the loop's body
is the innermost coroutine in that chain that runs a method of the component's own
class (`_worker_watchdog`, `_cleanup_expired_entries`, ...), whatever wraps it (a
supervisor coroutine, a done callback that relaunches a fresh task, nothing). The body
is named by its method's qualified name, and one body *coroutine object* is one run of
the loop: a restart is a new coroutine object of the same method.

A fault is injected where a loop waits: the future its task is suspended on (a sleep, a
queue read, an event) is failed with `LoopFault`, as if what it awaited had raised. A
body that catches it (the result listener counts receive errors) is injected again
where it waits next, until the exception leaves the body (`escape`). Times are the
loop's own (`VirtualLoop`: only the jumps move it), moved from one due timer to the next
(`advance_to_next`), so a back-off is measured, not slept, and the same on a loaded machine.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import CodeType
from typing import Any

from reference.aioloop import JumpLoop

INJECT_TRIES = 4  # injections into one run before it counts as catching every error
EARLY = 0.001  # seconds a timer may fire before its time (the loop's clock resolution, with margin)


class VirtualLoop(JumpLoop):
    """A `JumpLoop` whose clock moves only when advanced, never with the wall clock: a gap
    measured on it is the loop's own back-off, not the machine's load (a process descheduled
    for half a second would otherwise add half a second to it). Waiting for I/O still works:
    a call from another thread wakes the selector; these checks do no other I/O."""

    def __init__(self) -> None:
        super().__init__()
        self._base = super().time()

    def time(self) -> float:
        return self._base + self._offset


class LoopFault(RuntimeError):
    """The exception injected into a waiting loop (its text names the loop and the round)."""


@dataclass(frozen=True)
class Run:
    """One run of a loop: its body's coroutine object and the task that runs it."""

    name: str
    body: Any  # the body's coroutine object
    task: asyncio.Task[Any]

    @property
    def alive(self) -> bool:
        return self.body.cr_frame is not None  # a finished coroutine has no frame


def component_codes(component: object) -> dict[CodeType, str]:
    """The code of every function defined on the component's class and its bases."""
    codes: dict[CodeType, str] = {}
    for klass in type(component).__mro__:
        for value in vars(klass).values():
            code = getattr(getattr(value, "__func__", value), "__code__", None)
            if isinstance(code, CodeType):
                codes[code] = code.co_qualname
    return codes


def chain(task: asyncio.Task[Any]) -> list[Any]:
    """The coroutines of a task, outermost first, down to what its innermost one awaits."""
    found: list[Any] = []
    coro: Any = task.get_coro()
    while coro is not None and hasattr(coro, "cr_code"):
        found.append(coro)
        coro = getattr(coro, "cr_await", None)
    return found


def runs(loop: asyncio.AbstractEventLoop, component: object) -> dict[str, Run]:
    """The component's loops running now, by body name (one run each, the innermost found)."""
    codes, me = component_codes(component), asyncio.current_task(loop)
    found: dict[str, Run] = {}
    for task in asyncio.all_tasks(loop):
        if task is me or task.done():
            continue
        bodies = [coro for coro in chain(task) if coro.cr_code in codes]
        if bodies:
            found[codes[bodies[-1].cr_code]] = Run(codes[bodies[-1].cr_code], bodies[-1], task)
    return found


def inject(run: Run, text: str) -> bool:
    """Fail the future the run's task waits on with `LoopFault(text)`; False if it waits on none."""
    waiter = getattr(run.task, "_fut_waiter", None)  # private, but stable in CPython (as `_ready`)
    if waiter is None or waiter.done():
        return False
    waiter.set_exception(LoopFault(text))
    return True


async def escape(loop: JumpLoop, run: Run, text: str) -> float | None:
    """Inject where the run waits until the exception leaves its body. Returns the loop's time
    of the injection that did it (None if none did)."""
    for _ in range(INJECT_TRIES):
        before = loop.time()
        if not inject(run, text):
            return None
        await loop.settle()
        if not run.alive:
            return before
    return None


async def advance_to_next(loop: JumpLoop, until: float) -> bool:
    """Move the loop's clock to its next due timer (or to `until`, if sooner); False at `until`."""
    await loop.settle()  # what is ready first: it may arm the next timer
    pending = [handle.when() for handle in loop._scheduled if not handle.cancelled()]  # type: ignore[attr-defined]
    target = min([*pending, until])
    await loop.advance(max(0.0, target - loop.time()))
    return target < until


async def next_run(loop: JumpLoop, component: object, old: Run, since: float, within: float) -> float | None:
    """Seconds from `since` until a new run of `old`'s loop waits again (None: none by `within`)."""
    while True:
        now = runs(loop, component).get(old.name)
        if now is not None and now.body is not old.body:
            return loop.time() - since
        if not await advance_to_next(loop, since + within):
            now = runs(loop, component).get(old.name)
            return loop.time() - since if now is not None and now.body is not old.body else None
