"""The `simulation` check every lesson with a profile carries (a deep check).

It searches its lesson's profile (`profiles.py`) for a run that breaks an invariant,
within the lesson's share of the deep-check budget, and reports:

- `bug`: the invariant, what was seen, the shrunk counterexample as a timeline, and the
  file `python -m reference --replay FILE` runs again;
- `ok`: "N generated runs held every invariant (seed S)": every planned run held;
- `unknown`: the time ran out before the planned runs did (`search.planned_runs`).
"""

from __future__ import annotations

from types import ModuleType

from reference.harness.checks import Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.sim.invariants import INVARIANTS, checked_by
from reference.sim.profiles import PROFILES
from reference.sim.report import save, timeline
from reference.sim.search import search

CHECK_ID = "simulation"
SHARE = 0.6  # of the lesson's deep-check budget where it has explorations too; they have the rest


def share_of(lesson: str) -> float:
    """The simulation's share of its lesson's deep-check budget: all of it, or SHARE when the
    lesson has explorations (the upstream fix claims a property of `reference/explore`)."""
    from reference.explore import PROPERTIES

    return SHARE if any(p.claimed for p in PROPERTIES.get(lesson, ())) else 1.0


NEEDS = ("KVManager", "KVReceiver", "KVManager.update_status", "KVManager._cleanup_room_tracking",
         "KVReceiver.init", "KVReceiver.send_metadata", "KVReceiver.poll", "KVReceiver.clear")  # fmt: skip


def simulation_check(lesson: str) -> Check:
    profile = PROFILES[lesson]
    own = sorted(checked_by(lesson))

    def body(variant: ModuleType, options: Options) -> Observation:
        outcome = search(
            variant, profile, options.sockets, options.seed, options.budget * share_of(lesson), frozenset(own)
        )
        if outcome.failing is None:
            if outcome.verdict == "ok":
                return Observation("ok", f"{outcome.runs} generated runs held every invariant (seed "
                                   f"{options.seed}, {outcome.seconds:.1f} s)")  # fmt: skip
            return Observation("unknown", f"the time ran out after {outcome.runs} of {outcome.planned} "
                               f"planned runs ({outcome.seconds:.1f} s)")  # fmt: skip
        run, violation = outcome.failing, outcome.failing.violation
        assert violation is not None
        path = save(run, lesson, variant)
        symptom = (f"{violation.invariant}: {violation.detail} (after {outcome.runs} runs; shrunk to "
                   f"{len(run.plan.steps)} steps; replay: python -m reference --replay {path})")  # fmt: skip
        return Observation("bug", symptom, details={"counterexample": timeline(run), "replay": str(path)})

    claim = f"generated workloads and faults ({', '.join(profile.faults)}) keep {', '.join(own)}"
    source = "; ".join(dict.fromkeys(INVARIANTS[i].source for i in own if INVARIANTS[i].lesson != "*"))
    return Check(CHECK_ID, claim, source or "every lesson's whole-state and thread invariants", body,
                 NEEDS, ("mock",), deep=True)  # fmt: skip
