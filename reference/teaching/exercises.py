"""Checking a reader's answer to a notebook exercise.

Two kinds. A warm-up asks for a prediction; the checker works the truth out by running
the experiment live on the real components, then compares. It never raises on a wrong or
missing answer (a notebook executed in CI holds the unanswered placeholder), it returns
`Feedback`, which prints as a short verdict with the evidence.

A coding exercise has the learner write the fix in a cell, as a subclass of the buggy
component (`class KVManager(reference.buggy.KVManager): ...`). `variant_from(globals())`
makes a variant module from the learner's classes, falling back to `reference.buggy`'s
for the rest, and `check_fix(lesson, variant)` runs the lesson's full checklist against
it in-process, printing each check's verdict and, for a failing one, its claim and what
was observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

import reference.buggy
from reference.harness.result import Result

FALLBACK = reference.buggy
COMPONENTS = tuple(FALLBACK.__all__)  # the classes a variant provides (README, "The variant protocol")


@dataclass(frozen=True)
class Feedback:
    status: str  # "correct", "wrong" or "unanswered"
    message: str
    evidence: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        heads = {"correct": "Correct.", "wrong": "Not quite.", "unanswered": "No answer yet."}
        text = f"{heads[self.status]} {self.message}"
        return f"{text}\nEvidence, run just now:\n{self.evidence}" if self.evidence else text

    def __repr__(self) -> str:
        return str(self)


def check_choice(
    answer: object, truth: str, choices: Sequence[str], why: str, hint: str, evidence: str
) -> Feedback:
    """Compare a one-letter answer with the truth found live; a wrong one gets a hint only."""
    if answer is None:
        return Feedback("unanswered", f"Set ANSWER to one of {', '.join(map(repr, choices))} and run again.")
    given = str(answer).strip().strip("()").lower()
    if given not in choices:
        return Feedback("wrong", f"{answer!r} is not one of {', '.join(map(repr, choices))}.")
    if given == truth:
        return Feedback("correct", why, evidence)
    return Feedback("wrong", f"You said {given!r}. Hint: {hint}")


def variant_from(namespace: Mapping[str, object], name: str = "your fix") -> ModuleType:
    """A variant module: the learner's component classes found in `namespace` (a cell's
    `globals()`), and `reference.buggy`'s for every component the learner did not write."""
    module = ModuleType(name)
    module.__doc__ = "A learner's fix, built from a notebook's exercise cell."
    for component in COMPONENTS:
        mine = namespace.get(component)
        module.__dict__[component] = mine if isinstance(mine, type) else getattr(FALLBACK, component)
    module.__all__ = list(COMPONENTS)  # type: ignore[attr-defined]
    return module


@dataclass(frozen=True)
class FixReport:
    """The lesson's checklist run against a learner's fix; prints one line per check."""

    result: Result
    claims: Mapping[str, str]
    written: tuple[str, ...]

    @property
    def verdict(self) -> str:
        return self.result.verdict

    def failing(self) -> list[str]:
        return [c.id for c in self.result.checks if c.verdict != "ok"]

    def __str__(self) -> str:
        checks = self.result.checks
        held = sum(c.verdict == "ok" for c in checks)
        yours = ", ".join(self.written) or "none (all of reference.buggy)"
        verdict = f"Verdict {self.verdict.upper()}: {held} of {len(checks)} checks hold."
        lines = [f"{self.result.lesson}, your classes: {yours}. {verdict}"]
        for check in checks:
            lines.append(f"  {check.verdict.upper():<7} {check.id}")
            if check.verdict != "ok":
                lines.append(f"          claim:    {self.claims.get(check.id, 'the lesson story')}")
                lines.append(f"          observed: {check.symptom}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


def check_fix(lesson: str, variant: ModuleType) -> FixReport:
    """Run `lesson`'s full checklist against `variant` (from `variant_from`), in-process."""
    from reference.lessons import LESSONS, Options, run_lesson
    from reference.teaching.runs import outside_event_loop
    from reference.variants import Variant

    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose from {', '.join(LESSONS)}")
    chosen = Variant(variant.__name__, variant, "ok")
    result = outside_event_loop(lambda: run_lesson(LESSONS[lesson], chosen, Options()))
    claims = {check.id: check.claim for check in LESSONS[lesson].checklist("mock")}
    written = tuple(c for c in COMPONENTS if getattr(variant, c) is not getattr(FALLBACK, c))
    return FixReport(result, claims, written)
