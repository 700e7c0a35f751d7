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
was observed. With `explore=True` it also runs the lesson's explorations (reference/explore:
every interleaving of the race's threads, no hooks) against the same classes and shows each
verdict, with the two-lane trace of a counterexample (`explorations` below).

frontrun, the explorer, patches `threading`'s locks while it runs and wants its own process
environment, so `explorations` never runs it in the notebook's process: it forks a child (which
inherits the learner's classes, defined in a cell and importable from nowhere), runs the
explorations there and reads back their findings, within `EXPLORE_BOUND` seconds.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import reference.buggy
from reference.explore.runner import Finding
from reference.harness.result import Result
from reference.teaching import calls
from reference.teaching.text import wrap

FALLBACK = reference.buggy
EXPLORE_BOUND = 20.0  # real seconds for all of one lesson's explorations (each takes under 1 s here)
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
    explored: Explorations | None = None  # with check_fix(..., explore=True)
    calls: Mapping[str, int] = field(default_factory=dict)  # Class.method -> calls (teaching/calls.py)
    changes: Mapping[str, Mapping[str, int]] = field(
        default_factory=dict
    )  # Class.method -> what its calls changed
    held: Mapping[str, set[str]] = field(default_factory=dict)  # Class.method -> components compared too

    @property
    def verdict(self) -> str:
        """The checklist's verdict, unless a claimed exploration found worse."""
        found = [self.result.verdict, *(self.explored.verdicts() if self.explored else ())]
        return next((v for v in ("bug", "unknown") if v in found), self.result.verdict)

    def failing(self) -> list[str]:
        """The ids of the checks, and of the claimed explorations, that do not hold."""
        explored = self.explored.failing() if self.explored else []
        return [c.id for c in self.result.checks if c.verdict != "ok"] + explored

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
        lines += calls.summary(self.calls, self.result.verdict, self.changes, self.held)
        if self.explored:
            lines += ["", str(self.explored), "", f"Checklist and explorer together: {self.verdict.upper()}."]
        return wrap("\n".join(lines))

    def __repr__(self) -> str:
        return str(self)


def check_fix(lesson: str, variant: ModuleType, explore: bool = False) -> FixReport:
    """Run `lesson`'s full checklist against `variant` (from `variant_from`), in-process;
    with `explore`, also the lesson's explorations (in a forked child, see `explorations`)."""
    from reference.lessons import LESSONS, Options, run_lesson
    from reference.teaching.runs import outside_event_loop
    from reference.variants import Variant

    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose from {', '.join(LESSONS)}")
    chosen = Variant(variant.__name__, variant, "ok")
    written = tuple(c for c in COMPONENTS if getattr(variant, c) is not getattr(FALLBACK, c))
    with calls.counting(variant, written) as tally:
        result = outside_event_loop(lambda: run_lesson(LESSONS[lesson], chosen, Options()))
    claims = {check.id: check.claim for check in LESSONS[lesson].checklist("mock")}
    explored = explorations(lesson, variant) if explore else None
    return FixReport(result, claims, written, explored, dict(tally.counts), tally.changes, tally.held)


@dataclass(frozen=True)
class Explorations:
    """A lesson's explorations against one variant: per property its verdict and what it
    found, then each counterexample's two-lane trace. Wall-clock times are left out."""

    lesson: str
    variant: str
    findings: tuple[Finding, ...]
    note: str = ""  # why nothing was explored (no exploration, no frontrun, a bound hit), one line
    inconclusive: bool = False  # the explorer was run and gave nothing: the verdict is unknown

    def verdicts(self) -> list[str]:
        return [str(f.verdict) for f in self.findings if f.claimed] + ["unknown"] * self.inconclusive

    def failing(self) -> list[str]:
        return [f.property for f in self.findings if f.claimed and f.verdict != "ok"]

    def __repr__(self) -> str:
        head = (
            f"Explorer ({self.lesson} on {self.variant}: every interleaving of the race's threads, no hooks):"
        )
        if self.note:
            return f"{head}\n  {self.note}"
        lines = [head]
        for f in self.findings:
            # a residual is reported, never judged: its breaking is "still open", not a BUG of the fix
            mark = f.verdict.upper() if f.claimed else ("OPEN" if f.verdict == "bug" else f.verdict.upper())
            tag = "" if f.claimed else " (a residual the fix does not claim; not judged)"
            lines.append(f"  {mark:<7} {f.property}{tag}: {f.symptom}")
        for f in self.findings:
            if f.claimed and f.verdict == "bug" and f.trace:
                lines += [
                    "",
                    f"{f.property}: the counterexample (schedule {f.schedule}), replayed:",
                    "",
                    f.trace,
                ]
        return wrap("\n".join(lines))


def explorations(lesson: str, variant: ModuleType, bound: float = EXPLORE_BOUND) -> Explorations:
    """Run `lesson`'s explorations (reference/explore) against `variant` in a forked child,
    bounded by `bound` seconds in all; a lesson without explorations gives no findings."""
    from reference.explore import PROPERTIES

    name = variant.__name__.removeprefix("reference.")
    if lesson not in PROPERTIES:
        return Explorations(lesson, name, (), note=f"{lesson} has no exploration (not a thread race)")
    try:
        import frontrun  # noqa: F401
    except ImportError:
        return Explorations(
            lesson, name, (), note="needs frontrun (pip install frontrun==0.7.0, the test extra)"
        )
    if "fork" not in multiprocessing.get_all_start_methods():
        return Explorations(lesson, name, (), note="needs fork() to reach your classes in a child")
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_explore_child, args=(writer, lesson, variant, name), daemon=True)
    with warnings.catch_warnings():  # Python 3.12+ warns about fork() in a threaded process
        warnings.filterwarnings("ignore", r".*multi-threaded.*fork", DeprecationWarning)
        child.start()
    writer.close()
    try:
        if not reader.poll(bound):
            return Explorations(lesson, name, (), f"stopped at its {bound:g} s bound", inconclusive=True)
        return Explorations(lesson, name, tuple(Finding(**f) for f in reader.recv()))
    except EOFError:
        return Explorations(
            lesson, name, (), "the exploring child ended without a finding", inconclusive=True
        )
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        reader.close()


def _explore_child(writer: Any, lesson: str, variant: ModuleType, name: str) -> None:
    """In the forked child: frontrun's guard wants its environment variable (no I/O
    detection is used, so its preload library is not needed); nothing reaches the
    notebook's output."""
    from reference.explore import PROPERTIES
    from reference.explore.runner import explore as explore_property
    from reference.variants import Variant

    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the child exits right after)
    os.environ["FRONTRUN_ACTIVE"] = "1"
    chosen = Variant(name, variant, "ok")
    writer.send([explore_property(prop, chosen).to_json() for prop in PROPERTIES[lesson]])
    writer.close()
