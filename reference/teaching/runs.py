"""Run a lesson from a notebook and print its verdicts the way the CLI would.

A thin layer over `reference.scenarios.run_lesson`: the notebook names a lesson and a
shipped variant, gets the `Result` (verdict, symptom, timeline, details) back, and
prints one line per result. Nothing here decides a verdict; the scenario does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reference.scenarios import LESSONS, Options, run_lesson
from reference.scenarios.result import Result
from reference.variants import SHIPPED, shipped


def run(lesson: str, variant: str = "buggy", seed: int = 0, repeat: int = 0) -> Result:
    """One lesson against one shipped variant on the mock transport."""
    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose from {', '.join(LESSONS)}")
    if variant not in SHIPPED:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(SHIPPED)}")
    return run_lesson(LESSONS[lesson], shipped(variant), Options(seed=seed, repeat=repeat))


def run_all(lesson: str, variants: Iterable[str] = tuple(SHIPPED), seed: int = 0) -> list[Result]:
    return [run(lesson, variant, seed) for variant in variants]


def verdict_line(result: Result) -> str:
    mark = "as expected" if result.as_expected else f"EXPECTED {result.expected}"
    return f"{result.variant:>6}: {result.verdict.upper():<7} ({mark}) {result.symptom}"


def verdict_table(results: Sequence[Result]) -> str:
    return "\n".join(verdict_line(result) for result in results)
