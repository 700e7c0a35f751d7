"""Search for a failing plan within a time budget, and shrink the one found.

Hypothesis draws plans from the lesson's profile (`plan.plans`), runs each
(`run.run_plan`) and, when one breaks an invariant, shrinks it to a minimal list of
steps that still breaks the same invariant. The seed fixes what is drawn, so the same
seed and budget find the same runs on any machine (the budget can only cut a search
shorter). The outcome:

- `bug`: the shrunk plan, the invariant, and its run's log;
- `ok`: at least `MIN_RUNS` plans ran and none broke an invariant;
- `unknown`: the budget ended before `MIN_RUNS` plans had run.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, replace
from types import ModuleType

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from reference.sim.plan import Plan, Profile, plans
from reference.sim.run import Run, run_plan

MIN_RUNS = 30  # fewer plans than this in the budget: `unknown`, never `ok`
RUNS_PER_SECOND = 30  # about what one core runs; sizes Hypothesis's phases to the budget


@dataclass
class Outcome:
    verdict: str  # "bug", "ok" or "unknown"
    runs: int
    seconds: float
    failing: Run | None = None  # the shrunk counterexample, for `bug`


def search(variant: ModuleType, profile: Profile, sockets: str, seed: int, budget: float) -> Outcome:
    started = time.perf_counter()
    deadline = started + budget
    runs = 0
    failing: list[Run] = []

    @hypothesis_seed(seed)
    @settings(max_examples=max(MIN_RUNS, int(budget * RUNS_PER_SECOND)), deadline=None, database=None,
              phases=(Phase.generate, Phase.target, Phase.shrink), report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)  # fmt: skip
    @given(plans(profile, sockets, seed))
    def attempt(plan: Plan) -> None:
        nonlocal runs
        now = time.perf_counter()
        if failing and now >= deadline + budget:
            # Shrinking may take as long as the search; past that, every candidate counts as
            # failing, so Hypothesis ends at once. Only real runs are kept (`failing`).
            raise _broke(failing[0].violation.invariant)  # type: ignore[union-attr]
        if now >= deadline:
            return  # the budget is spent: draw no more runs
        run = run_plan(variant, plan)
        runs += 1
        target(float(run.overlap), label="cache generations in use at once")
        if run.violation is not None:
            same = not failing or run.violation.invariant == failing[0].violation.invariant  # type: ignore[union-attr]
            if same and (not failing or _smaller(run.plan, failing[-1].plan)):
                failing.append(run)
            raise _broke(run.violation.invariant)

    gc.freeze()  # the runs' gc.collect() then walks only what the runs made: 100x cheaper here
    try:
        attempt()
    except (AssertionError, Flaky):
        pass
    finally:
        gc.unfreeze()
    if failing:
        smallest = _minimize(variant, failing[-1], deadline + budget)
        return Outcome("bug", runs, time.perf_counter() - started, smallest)
    seconds = time.perf_counter() - started
    return Outcome("ok" if runs >= MIN_RUNS else "unknown", runs, seconds)


def _minimize(variant: ModuleType, run: Run, deadline: float) -> Run:
    """Drop steps one at a time while the same invariant still breaks (after Hypothesis's
    shrink, which keeps a list at least as long as the strategy's minimum)."""
    invariant = run.violation.invariant if run.violation else ""
    index = len(run.plan.steps) - 1
    while index >= 0 and time.perf_counter() < deadline:
        steps = run.plan.steps[:index] + run.plan.steps[index + 1 :]
        candidate = run_plan(variant, replace(run.plan, steps=steps))
        if candidate.violation is not None and candidate.violation.invariant == invariant:
            run = candidate
        index -= 1
    return run


_BROKE: dict[str, type[AssertionError]] = {}


def _broke(invariant: str) -> AssertionError:
    """One exception type per invariant, so Hypothesis shrinks each break as its own bug."""
    if invariant not in _BROKE:
        _BROKE[invariant] = type(f"Broke_{invariant.replace('-', '_')}", (AssertionError,), {})
    return _BROKE[invariant](invariant)


def _smaller(plan: Plan, than: Plan) -> bool:
    return (len(plan.steps), plan.managers, len(plan.prefills)) <= (len(than.steps), than.managers,
                                                                     len(than.prefills))  # fmt: skip
