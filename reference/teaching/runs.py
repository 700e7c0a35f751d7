"""Run a lesson from a notebook and print its verdicts the way the CLI would.

A thin layer over `reference.lessons.run_lesson`: the notebook names a lesson and a
shipped variant, gets the `Result` (verdict, symptom, timeline, details) back, and
prints one line per result. Nothing here decides a verdict; the scenario does.

Jupyter's kernel runs its cells inside a running asyncio loop, and a scenario that
starts its own loop (`task-refs`) cannot run there; `outside_event_loop` moves such a
call to a short-lived worker thread and hands back its result or its exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from reference.harness.result import Result
from reference.lessons import LESSONS, Options, run_lesson
from reference.teaching.text import wrap
from reference.variants import SHIPPED, shipped

T = TypeVar("T")
BOUND = 60.0  # real seconds any one call may take (the notebook's own bound)


def outside_event_loop(fn: Callable[[], T]) -> T:
    """`fn()`, on this thread unless an asyncio loop runs here (Jupyter), else on a worker."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lesson") as pool:
        return pool.submit(fn).result(timeout=BOUND)


def run(lesson: str, variant: str = "buggy", seed: int = 0, repeat: int = 0) -> Result:
    """One lesson against one shipped variant on the mock transport."""
    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose from {', '.join(LESSONS)}")
    if variant not in SHIPPED:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(SHIPPED)}")
    options = Options(seed=seed, repeat=repeat)
    return outside_event_loop(lambda: run_lesson(LESSONS[lesson], shipped(variant), options))


def run_all(lesson: str, variants: Iterable[str] = ("buggy", "fixed"), seed: int = 0) -> list[Result]:
    return [run(lesson, variant, seed) for variant in variants]


ALSO = " | also failing: "  # how a verdict's symptom appends the other failing checks


def verdict_line(result: Result, also: bool = True) -> str:
    """`variant: VERDICT (as expected) symptom`, each ` | `-joined part of the symptom (a
    component, or "also failing: ...") on a line of its own, wrapped at `text.WIDTH`.
    `also=False` keeps the story's symptom and only counts the other failing checks (a
    notebook prints the checklist once, in its exercise)."""
    mark = "as expected" if result.as_expected else f"EXPECTED {result.expected}"
    symptom = result.symptom
    if not also and ALSO in symptom:
        failing = sum(c.verdict != "ok" for c in result.checks[1:])
        symptom = symptom.split(ALSO)[0] + f" | and {failing} of the {len(result.checks) - 1} checks fail"
    line = f"{result.variant:>6}: {result.verdict.upper():<7} ({mark}) {symptom}"
    return wrap(line.replace(" | ", "\n        "))


def verdict_table(results: Sequence[Result], also: bool = True) -> str:
    return "\n".join(verdict_line(result, also) for result in results)
