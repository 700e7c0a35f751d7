"""Checking a reader's answer to a notebook exercise.

An exercise asks for a prediction; the checker works the truth out by running the
experiment live on the real components, then compares. It never raises on a wrong or
missing answer (a notebook executed in CI holds the unanswered placeholder), it returns
`Feedback`, which prints as a short verdict with the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
