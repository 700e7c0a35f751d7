"""Live experiments for lesson `task-refs` (PR #33048), beyond its scenario.

The scenario shows a collectable background loop destroyed in the buggy form. Its
honest half lives in `reference/lessons/task_refs/collectable.py` (which awaits leave a lone
task collectable at all) and `swallowed.py` (what the fix leaves open: a loop
that raises is silently gone). This module runs those for the notebook and checks its
exercise: two awaits that are not in the table, measured the same way.

For the notebook's mechanism cells it also holds the benches on which the notebook calls
the components itself: `LoopLab`, an event loop of its own on a worker thread (Jupyter's
kernel already runs one) on which a cell calls `DPDispatcher.start()`, and `ServerBench`,
a bootstrap server whose own thread runs `_start_background_tasks`; each can run
`gc.collect()` on its loop's thread and report what the loop said about destroyed tasks.
Both use the lesson's one honest change (waiters held weakly, `dispatcher_probe.py`,
`bootstrap_probe.py`) and upstream's timings on a `JumpLoop`.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, TypeVar

import reference.buggy
import reference.fixed
from reference.aioloop import JumpLoop, pending_tasks
from reference.common.cleanup_ticks import Metronome
from reference.harness.loop_capture import LoopErrors, loop_errors
from reference.lessons.task_refs import collectable
from reference.lessons.task_refs import swallowed as swallowed_loop
from reference.lessons.task_refs.bootstrap_probe import INTERVAL, TTL
from reference.lessons.task_refs.collectable import Probe, Row
from reference.lessons.task_refs.collectable_probes import HOUR, simple
from reference.lessons.task_refs.dispatcher_probe import CONFIG
from reference.teaching.exercises import Feedback, check_choice
from reference.teaching.runs import outside_event_loop
from reference.teaching.sources import Source, source
from reference.transport.dp_base import ExitNotices, WorkerPool
from reference.transport.kits import kit

T = TypeVar("T")
BOUND = 10.0  # real seconds any one call onto a bench's loop may take
__all__ = ["CONFIG", "LoopLab", "ServerBench"]  # CONFIG: upstream's dispatcher timeouts


async def own_queue() -> None:
    """Parked on a queue that only this task's frame references."""
    await asyncio.Queue().get()


async def wait_own_with_timeout() -> None:
    """Parked in `asyncio.wait` on its own future, with a timeout."""
    await asyncio.wait({asyncio.get_running_loop().create_future()}, timeout=HOUR)


EXERCISE_PROBES = {
    "X": Probe("X: await own_queue.get()", True, "nothing but the task", simple(own_queue)),
    "Y": Probe(
        "Y: await asyncio.wait({own_future}, timeout=3600)",
        False,
        "the loop's timer heap (the timeout's handle holds the waiter, whose callback is the task)",
        simple(wait_own_with_timeout),
    ),
}


def collectability_table() -> str:
    return outside_event_loop(collectable.table)


def swallowed(variant: ModuleType) -> str:
    name = variant.__name__.rsplit(".", 1)[-1]
    outcome = outside_event_loop(lambda: swallowed_loop.demonstrate(variant))
    return f"{name:>6}: {outcome.symptom}"


def both_forms_swallowed() -> str:
    return "\n".join(swallowed(form) for form in (reference.buggy, reference.fixed))


EXERCISE_CHOICES = ("a", "b", "c", "d")
EXERCISE = """\
Two bare tasks, nothing of ours references either. After gc.collect(), which are destroyed?
  X: async def x(): await asyncio.Queue().get()
  Y: async def y(): await asyncio.wait({loop.create_future()}, timeout=3600)
  (a) only X   (b) only Y   (c) both   (d) neither"""


def _measured() -> dict[str, Row]:
    return outside_event_loop(lambda: {name: collectable.measure(p) for name, p in EXERCISE_PROBES.items()})


def check_exercise(answer: object) -> Feedback:
    rows = _measured()
    x, y = rows["X"].collectable, rows["Y"].collectable
    truth = {(True, False): "a", (False, True): "b", (True, True): "c", (False, False): "d"}[(x, y)]
    return check_choice(
        answer,
        truth,
        EXERCISE_CHOICES,
        why="A parked task is reachable from whatever will wake it: the future it awaits holds "
        "the task's wake-up callback. X's queue, and the getter future in it, are reachable only "
        "from X's own frame: garbage. Y's timeout is a timer handle in the loop's heap, holding "
        "the waiter future, whose callback is Y: alive.",
        hint="for each task, follow the references from the event loop: timers, selector readers, "
        "executor work items. Does any of them lead to the future the task awaits?",
        evidence=collectable.table(list(rows.values())),
    )


def parking_source() -> Source:
    """Where the watchdog parks and who wakes it: the exit board's waiter set (weak in the
    lesson's configuration), its `next()` (the park) and `post()` (the release, from the
    pool when a worker exits), and the watchdog loop that awaits it."""
    from reference.common.dispatcher import DispatcherBase

    return source(ExitNotices.__init__, ExitNotices.post, ExitNotices.next, DispatcherBase._worker_watchdog)


class _OnLoop:
    """A `JumpLoop` run by some other thread, with what it reports about tasks captured."""

    def __init__(self) -> None:
        self.loop = JumpLoop()
        self._capture = loop_errors(self.loop)
        self.errors: LoopErrors = self._capture.__enter__()

    def run(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` on the loop's thread (bounded), then let the loop settle."""

        async def then_settle() -> T:
            result = await awaitable
            await self.loop.settle()
            return result

        return asyncio.run_coroutine_threadsafe(then_settle(), self.loop).result(BOUND)

    def call(self, fn: Callable[[], T]) -> T:
        """`fn()` on the loop's thread, inside a running loop (so `create_task` works there),
        then let the loop settle: the tasks it started run until they park."""

        async def call() -> T:
            return fn()

        return self.run(call())

    def tasks(self) -> list[str]:
        """The loop's pending tasks, by coroutine name."""

        async def names() -> list[str]:
            return pending_tasks(self.loop, exclude=asyncio.current_task())

        return self.run(names())

    def collect_garbage(self) -> dict[str, list[str]]:
        """`gc.collect()` on the loop's thread: the tasks the loop then reported "Task was
        destroyed but it is pending!" for, and the tasks still pending."""
        before = len(self.errors.destroyed())

        async def collect() -> None:
            gc.collect()

        self.run(collect())
        return {"destroyed while pending": self.errors.destroyed()[before:], "still pending": self.tasks()}


class LoopLab(_OnLoop):
    """An event loop on a worker thread, for components that start tasks on the running loop
    (Jupyter's own loop runs the cell, so the cell cannot). `close()` cancels what is left."""

    def __init__(self) -> None:
        super().__init__()
        self._thread = threading.Thread(target=self.loop.run_forever, name="lab-loop", daemon=True)
        self._thread.start()

    def worker_pool(self, size: int = 2) -> WorkerPool:
        """In-process DP workers posting their exits to a board that holds its waiters weakly
        (the lesson's one change: the watchdog is then collectable, `dispatcher_probe.py`)."""
        return kit("mock").worker_pool(size, hold_exit_waiters=False)

    def close(self) -> None:
        async def cancel_all() -> None:
            left = [t for t in asyncio.all_tasks(self.loop) if t is not asyncio.current_task()]
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(BOUND)
        self._capture.__exit__(None, None, None)
        self.loop.close()


class ServerBench(_OnLoop):
    """A bootstrap server of `variant` on its own thread and `JumpLoop`, not listening (the
    notebook talks to its table directly), with upstream's 120 s cleanup interval and entry
    lifetime; its cleanup waits on a metronome that holds it weakly (`bootstrap_probe.py`).
    `server.start()` runs `_start_background_tasks` on the server's thread."""

    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.ticks = Metronome(INTERVAL, hold_waiters=False)
        self.server: Any = variant.BootstrapServer(
            "127.0.0.1", 0, cleanup_interval=INTERVAL, entry_ttl=TTL, now=self.loop.time,
            cleanup_ticks=self.ticks, loop=self.loop, listen=False,
        )  # fmt: skip

    def register_rooms(self, rooms: range) -> int:
        """`POST /register_dp_rank` for each room (DP rank 0), through the server's table;
        the number of `room_to_dp_rank` entries after."""
        for room in rooms:
            body = f'{{"bootstrap_room": {room}, "dp_rank": 0}}'.encode()
            reply = self.server.table.handle("POST", "/register_dp_rank", {}, body)
            if reply.status != 200:
                raise RuntimeError(f"POST /register_dp_rank answered {reply.status}: {reply.body}")
        return len(self.server.table.room_to_dp_rank)

    def jump(self, seconds: float) -> dict[str, int]:
        """Move the server's clock; what its cleanup did meanwhile."""
        self.run(self.loop.advance(seconds))
        return {
            "room_to_dp_rank entries": len(self.server.table.room_to_dp_rank),
            "cleanup rounds": self.server.cleanup_rounds,
        }
