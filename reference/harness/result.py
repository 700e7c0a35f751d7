"""The verdict contract shared by every scenario.

A scenario observes what happened (status values, exceptions in threads, counters,
weakrefs) and reports `bug` (the defect was observed), `ok` (the invariant held over
the whole scenario) or `unknown` (it could not decide, e.g. it hit its time bound).
It never looks at which variant it was given.

`latent` is given only by the upstream adapter (`reference/upstream/wiring.py`): the
defect is there (the scenario shows it once the adapter adds the trigger), but
upstream's own wiring in that release does not trigger it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["bug", "ok", "unknown", "latent"]
VERDICTS: tuple[Verdict, ...] = ("bug", "ok", "unknown", "latent")


@dataclass(frozen=True)
class Event:
    """One point of a scenario's timeline (virtual or wall seconds since its start)."""

    t: float
    what: str
    detail: str = ""


@dataclass(frozen=True)
class CheckResult:
    id: str
    verdict: Verdict
    symptom: str
    timeline: list[Event] = field(default_factory=list)  # kept for the story's pictures
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        fields = {"id": self.id, "verdict": self.verdict, "symptom": self.symptom}
        for key in ("counterexample", "replay"):  # a simulation's shrunk run and its replay file
            if isinstance(self.details.get(key), str):
                fields[key] = self.details[key]
        return fields


@dataclass
class Result:
    lesson: str
    variant: str
    transport: str
    verdict: Verdict
    expected: Verdict
    symptom: str
    seconds: float = 0.0
    timeline: list[Event] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    backend: str = ""  # the KV backend asked for with --backend; "" for the default data plane
    checks: list[CheckResult] = field(default_factory=list)  # the story first, then the checklist
    sockets: str = "upstream"  # the decode's PUSH-socket options (reference/transport/sockets.py)

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.expected

    def to_json(self) -> dict[str, Any]:
        fields = {
            "lesson": self.lesson,
            "variant": self.variant,
            "transport": self.transport,
            "sockets": self.sockets,
            "verdict": self.verdict,
            "expected": self.expected,
            "symptom": self.symptom,
            "seconds": round(self.seconds, 4),
        }
        if self.backend:
            fields["backend"] = self.backend
        if self.checks:
            fields["checks"] = [check.to_json() for check in self.checks]
        return fields


@dataclass(frozen=True)
class Observation:
    """What a scenario body returns; `run_lesson` turns it into a `Result`."""

    verdict: Verdict
    symptom: str
    timeline: list[Event] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
