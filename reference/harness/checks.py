"""A lesson is a checklist: one named check per behaviour its upstream fix guarantees.

The hooked scenario of each lesson (its `body`) tells the story of one interleaving and
one headline symptom. A fix can make that story pass and still be wrong, so each lesson
also lists `Check`s: a property any correct fix has (never one tuned to our fixed form),
the upstream hunk or PR sentence it comes from, and a scenario that observes it on any
variant. The story is itself the first check, `story`.

A lesson's verdict is `bug` when any check is `bug`, else `unknown` when any check could
not decide, else `ok`; its symptom names the failing checks. Checks that have no
scenario for the transport asked for are not run (and not counted), nor are checks that
drive only components the variant declares unavailable (its `UNAVAILABLE`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from reference.harness.options import Options
from reference.harness.result import CheckResult, Observation, Verdict

Body = Callable[[ModuleType, Options], Observation]
STORY = "story"  # the id of the lesson's hooked scenario, run as its first check


@dataclass(frozen=True)
class Check:
    id: str  # kebab-case, unique within its lesson: `--check ID`, test ids, README
    claim: str  # the property, one line, in the present tense ("a failed send invalidates ...")
    source: str  # the upstream hunk or PR sentence it comes from, with its link
    body: Body
    needs: tuple[str, ...] = ()  # variant members it drives; () means the lesson's `needs`
    transports: tuple[str, ...] = ("mock",)
    # A deep check explores generated workloads or interleavings within `Options.budget`
    # (the seeded simulation, DPOR explorations); `--quick` leaves it out.
    deep: bool = False
    # A named configuration of the variant the check runs in (the upstream adapter's
    # `CONFIGURATIONS`, e.g. `staging`): only a variant that offers it runs the check, on
    # the module of that configuration; "" is the variant as it is.
    configuration: str = ""


def deferred(module: str, name: str) -> Body:
    """The body `name` of `module`, imported when the check first runs. The bodies of checks
    that only an upstream configuration runs live with those configurations
    (`reference/upstream/configured/`), which import the lessons' worlds: a lesson naming
    them this way imports none of upstream's adapter, and no import cycle forms."""

    def body(variant: ModuleType, options: Options) -> Observation:
        found: Body = getattr(importlib.import_module(module), name)
        return found(variant, options)

    body.__name__ = body.__qualname__ = name
    return body


def overall(results: Sequence[CheckResult]) -> Verdict:
    verdicts = {r.verdict for r in results}
    if "bug" in verdicts:
        return "bug"
    if "unknown" in verdicts or not results:
        return "unknown"
    return "latent" if "latent" in verdicts else "ok"  # latent: the upstream adapter only


def summary(results: Sequence[CheckResult]) -> str:
    """The lesson's one-line symptom: the story's, plus the checks that did not hold."""
    story = next((r for r in results if r.id == STORY), None)
    said = (story.verdict, story.symptom) if story else None  # a gap the story already names
    failing = [r for r in results if r.verdict != "ok" and r.id != STORY and (r.verdict, r.symptom) != said]
    if not failing:
        return story.symptom if story else ""
    listed = "; ".join(f"{r.id} {r.verdict}: {r.symptom}" for r in failing)
    if story is None or story.verdict == "ok":
        return f"{len(failing)} of {len(results)} checks failed: {listed}"
    return f"{story.symptom} | also failing: {listed}"


def score(results: Sequence[CheckResult]) -> str:
    """`n/m checks`: how many of the checks that ran held."""
    return f"{sum(r.verdict == 'ok' for r in results)}/{len(results)}"
