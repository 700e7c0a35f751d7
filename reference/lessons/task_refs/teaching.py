"""Live experiments for lesson `task-refs` (PR #33048), beyond its scenario.

The scenario shows a collectable background loop destroyed in the buggy form. Its
honest half lives in `reference/lessons/task_refs/collectable.py` (which awaits leave a lone
task collectable at all) and `swallowed.py` (what the fix leaves open: a loop
that raises is silently gone). This module runs those for the notebook and checks its
exercise: two awaits that are not in the table, measured the same way.
"""

from __future__ import annotations

import asyncio
from types import ModuleType

import reference.buggy
import reference.fixed
from reference.lessons.task_refs import collectable
from reference.lessons.task_refs import swallowed as swallowed_loop
from reference.lessons.task_refs.collectable import Probe, Row
from reference.lessons.task_refs.collectable_probes import HOUR, simple
from reference.teaching.exercises import Feedback, check_choice
from reference.teaching.runs import outside_event_loop


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
