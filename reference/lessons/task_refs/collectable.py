"""The honest half of lesson `task-refs`: which awaits leave a lone task collectable.

The event loop holds tasks only weakly, but a parked task is also reachable from
whatever will wake it. If that is only the task's own frame (its own Future, Event,
`gather` of its own futures), nothing outside reaches the task and `gc.collect()`
destroys it mid-execution. If the waker is held by the loop (a timer in its heap for
`sleep` and `wait_for`, a selector reader for zmq.asyncio and aiohttp sockets, an
executor thread's work item), the task survives without any reference of ours. That
is why upstream's sleep- and socket-driven loops were latent; the fix is still right,
because "what does this loop wait on" is an accident of today's code.

Each probe parks one task, keeps no reference that reaches it (only a weakref and
resources that do not lead back to it), runs `gc.collect()`, and records what the
running Python did. `table()` is printed by `python -m reference --lesson task-refs`.
"""

from __future__ import annotations

import asyncio
import gc
import platform
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.harness.loop_capture import loop_errors
from reference.lessons.task_refs import collectable_probes as probes
from reference.lessons.task_refs.collectable_probes import Parked, simple


@dataclass(frozen=True)
class Probe:
    awaits: str
    expected: bool  # collectable, as measured on CPython 3.11, 3.12 and 3.13
    held_by: str
    setup: Callable[[], Parked]


@dataclass(frozen=True)
class Row:
    awaits: str
    collectable: bool
    expected: bool
    held_by: str
    reported: bool  # the loop logged "Task was destroyed but it is pending!"
    note: str = ""


PROBES = (
    Probe("own Future", True, "nothing but the task", simple(probes.own_future)),
    Probe("own Event", True, "nothing but the task", simple(probes.own_event)),
    Probe("gather of own futures", True, "nothing but the task", simple(probes.gather_own)),
    Probe("aiohttp runner parked on a private Event", True, "nothing but the task", probes.aiohttp_runner),
    Probe("asyncio.sleep", False, "the loop's timer heap", simple(probes.sleep)),
    Probe("wait_for (own Future, timeout)", False, "the loop's timer heap", simple(probes.wait_for)),
    Probe("zmq.asyncio recv", False, "a selector reader on the socket's fd", probes.zmq_recv),
    Probe("aiohttp socket read", False, "a selector reader on the connection", probes.aiohttp_read),
    Probe("executor call", False, "the executor thread's work item", probes.executor_call),
)


def measure(probe: Probe) -> Row:
    return run_on_jump_loop(lambda loop: _measure(loop, probe))


async def _measure(loop: JumpLoop, probe: Probe) -> Row:
    parked = probe.setup()
    with loop_errors(loop) as errors:
        ref = weakref.ref(loop.create_task(parked.park()))
        await parked.ready(loop)
        gc.collect()
        survivor = ref()
        collectable = survivor is None
        if survivor is not None:
            survivor.cancel()
            await asyncio.gather(survivor, return_exceptions=True)
            del survivor
        note = await parked.cleanup()
    reported = bool(errors.destroyed())
    return Row(probe.awaits, collectable, probe.expected, probe.held_by, reported, note)


def measure_all() -> list[Row]:
    return [measure(probe) for probe in PROBES]


def table(rows: list[Row] | None = None) -> str:
    rows = rows if rows is not None else measure_all()
    width = max(len(row.awaits) for row in rows)
    lines = [
        f"Which awaits leave a lone task collectable (measured now on Python {platform.python_version()}):",
        f"  {'a task parked in':<{width}}  collected by gc.collect()  what else reaches it",
    ]
    for row in rows:
        verdict = "YES, destroyed" if row.collectable else "no"
        mark = "" if row.collectable == row.expected else "  (differs from what 3.11-3.13 do!)"
        note = f"; {row.note}" if row.note else ""
        lines.append(f"  {row.awaits:<{width}}  {verdict:<25}  {row.held_by}{note}{mark}")
    return "\n".join(lines)
