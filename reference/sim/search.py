"""Search for a failing plan: a planned number of runs within a time budget, then shrink.

Hypothesis draws plans from the lesson's profile (`plan.plans`) and runs each
(`run.run_plan`), steered (`target`) towards runs with several cache generations in use
at once. The search plans `planned_runs(budget)` runs: the seed fixes them, so the same
seed and budget run the same plans, in the same order, on any machine. When one breaks
an invariant, Hypothesis shrinks it and delta debugging (`_minimize`) finishes the job,
each for half as long as the search at most. The outcome:

- `bug`: the shrunk plan, the invariant, and its run's log;
- `ok`: every planned run held every invariant;
- `unknown`: the time ran out before the planned runs did (a slow or loaded machine).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from types import ModuleType

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from reference.sim.plan import Plan, Profile, plans
from reference.sim.run import Run, run_plan

# The fewest runs a search plans (a variant may declare fewer, `SIM_MIN_RUNS`: an upstream
# release's runs are 4x slower). What the default run gives a lesson whose only deep check is
# the simulation buys fewer: it plans these, the runs the wrong-fix galleries are measured with.
MIN_RUNS = 60
RUNS_PER_SECOND = 12  # planned per second of budget: a 2-core machine runs 7 (tests on both cores) to 25
OVERRUN = 3.0  # the planned runs may take this many times their cost at the rate before the search stops
ROUNDS, ROUND_SEEDS = 8, 1_000_003  # Hypothesis rounds at most, and how far apart their seeds are


def planned_runs(budget: float, rate: float = RUNS_PER_SECOND, floor: int = MIN_RUNS) -> int:
    """Runs planned for `budget` seconds at `rate` runs a second (a variant may declare its
    own, `SIM_RUNS_PER_SECOND`: an upstream release's runs are slower), `floor` at least."""
    return max(floor, int(budget * rate))


def planned_seconds(budget: float, rate: float = RUNS_PER_SECOND, floor: int = MIN_RUNS) -> float:
    """What the planned runs cost at `rate`: the budget, or more where the floor is above
    what it buys (a small share of `--budget`, a variant with slow runs)."""
    return max(budget, planned_runs(budget, rate, floor) / rate)


@dataclass
class Outcome:
    verdict: str  # "bug", "ok" or "unknown"
    runs: int
    seconds: float
    failing: Run | None = None  # the shrunk counterexample, for `bug`
    planned: int = 0


def search(
    variant: ModuleType, profile: Profile, sockets: str, seed: int, budget: float,
    checking: frozenset[str] | None = None,
) -> Outcome:  # fmt: skip
    started = time.perf_counter()
    rate = getattr(variant, "SIM_RUNS_PER_SECOND", RUNS_PER_SECOND)
    floor = getattr(variant, "SIM_MIN_RUNS", MIN_RUNS)
    planned, runs = planned_runs(budget, rate, floor), 0
    deadline = started + OVERRUN * planned_seconds(budget, rate, floor)
    failing: list[Run] = []

    def attempts(round_seed: int, examples: int) -> None:
        @hypothesis_seed(round_seed)
        @settings(max_examples=examples, deadline=None, database=None,
                  phases=(Phase.generate, *([Phase.target] if profile.steer else []), Phase.shrink),
                  report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                  verbosity=Verbosity.quiet)  # fmt: skip
        @given(plans(profile, sockets, seed, bool(getattr(variant, "SIM_OWN_SOCKETS_ONLY", False))))
        def attempt(plan: Plan) -> None:
            nonlocal runs
            now = time.perf_counter()
            if failing and now >= deadline:
                # Hypothesis may shrink until the search's deadline (then `_minimize` for half the
                # budget); past that, every candidate counts as failing, so Hypothesis ends at once.
                # Only real runs are kept (`failing`).
                raise _broke(failing[0].violation.invariant)  # type: ignore[union-attr]
            if now >= deadline or runs >= planned:
                return  # out of time (the outcome is `unknown`), or the planned runs are done
            run = run_plan(variant, plan, checking)
            runs += 1
            target(float(run.overlap), label="cache generations in use at once")
            if run.violation is not None:
                same = not failing or run.violation.invariant == failing[0].violation.invariant  # type: ignore[union-attr]
                if same and (not failing or _smaller(run.plan, failing[-1].plan)):
                    failing.append(run)
                raise _broke(run.violation.invariant)

        with contextlib.suppress(AssertionError, Flaky):  # a break (kept in `failing`), or a flaky one
            attempt()

    gc.freeze()  # the runs' gc.collect() then walks only what the runs made: 100x cheaper here
    with _no_local_constants():
        # Hypothesis may end a round before its max_examples (it judges the space explored):
        # the next round, seeded from the same seed, draws the rest, until the planned runs are
        # done or the time is out. The same seed still runs the same plans on any machine.
        try:
            for round_index in range(ROUNDS):
                if failing or runs >= planned or time.perf_counter() >= deadline:
                    break
                attempts(seed + round_index * ROUND_SEEDS, planned - runs)
        finally:
            gc.unfreeze()
    if failing:
        smallest = _minimize(variant, failing[-1], time.perf_counter() + budget / 2, checking)
        return Outcome("bug", runs, time.perf_counter() - started, smallest, planned)
    seconds = time.perf_counter() - started
    return Outcome("ok" if runs >= planned else "unknown", runs, seconds, None, planned)


@contextlib.contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis draws 5% of its numbers from literals it finds in the loaded modules of
    the project under test (`providers._get_local_constants`): the plans of one seed would
    then depend on what else the process imported (pytest's plugin, the CLI, a notebook)
    and on every literal anywhere in this repository. The search draws without them (and
    without the choices cached from them), so a seed names the same plans in any process."""
    from hypothesis.internal.conjecture import providers

    own = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = own
        providers.CONSTANTS_CACHE.cache.clear()


def _minimize(variant: ModuleType, run: Run, deadline: float, checking: frozenset[str] | None) -> Run:
    """Delta debugging over the steps: drop chunks of them (halves, quarters, ... single steps)
    while the same invariant still breaks. Hypothesis's own shrink keeps a list at least as long
    as the strategy's minimum and may run out of time on a long plan; this finishes the job."""
    invariant = run.violation.invariant if run.violation else ""
    chunk = max(1, len(run.plan.steps) // 2)
    while chunk >= 1 and time.perf_counter() < deadline:
        start = len(run.plan.steps) - chunk
        while start >= 0 and time.perf_counter() < deadline:
            steps = run.plan.steps[:start] + run.plan.steps[start + chunk :]
            candidate = run_plan(variant, replace(run.plan, steps=steps), checking)
            if candidate.violation is not None and candidate.violation.invariant == invariant:
                run = candidate
            start -= chunk
        chunk //= 2
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
