"""The simulation's time bound covers the runs it planned (`reference/sim/search.py`).

The plans are fixed by the seed and the budget (at least MIN_RUNS); the search gives up
after OVERRUN times what those runs cost at the variant's rate. Where the floor is above
what the budget buys (a lesson's small share of `--budget`, an upstream release's 3 runs a
second), the bound is the floor's cost, not the budget's: measured before this, 0.5.19's
failed-resurrect simulation planned 30 runs at 3 a second (10 s) within 3 x 2.7 s, and said
`unknown` after 26 of them at load 5."""

from reference.sim.search import MIN_RUNS, RUNS_PER_SECOND, planned_runs, planned_seconds


def test_a_budget_that_buys_the_floor_is_the_cost():
    budget = 10.0
    assert planned_runs(budget) == int(budget * RUNS_PER_SECOND) >= MIN_RUNS
    assert planned_seconds(budget) == budget


def test_below_the_floor_the_cost_is_the_floors_at_the_variants_rate():
    assert planned_runs(2.67, rate=3, floor=30) == 30
    assert planned_seconds(2.67, rate=3, floor=30) == 30 / 3  # an upstream release's: 10 s, not 2.67
    assert planned_runs(1.0) == MIN_RUNS
    assert planned_seconds(1.0) == MIN_RUNS / RUNS_PER_SECOND  # 5 s at our forms' rate
