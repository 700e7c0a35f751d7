"""The explorations as deep checks of the default run (reference/harness/deep.py).

`python -m reference --impl X` runs each explored lesson's claimed properties as checks
`explore-<property>` within `--budget`; `--quick` leaves them out. Here: buggy and
wrong fixes that leave one check-then-act on the shared cache unlocked are `bug`
(tests/explore_fixes), fixed is `ok`, a search that stops at its time bound is
`unknown`, the budget is shared as documented, and `--replay FILE` fails in one line.
"""

import json
import os
import types

import pytest
from explore_run import REPO

from reference.cli import main
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.harness.checks import Check
from reference.harness.options import Options
from reference.lessons import LESSONS
from reference.sim.check import SHARE as SIM_SHARE
from reference.variants import Variant, shipped

FIXES = f"{REPO}/tests/explore_fixes"
BUDGET = ("--budget", "10")


def _checks(capsys, *args: str) -> dict[str, dict]:
    code = main([*args, "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    return {"exit": code, **{c["id"]: c for c in result["checks"]}}


def _explorations(checks: dict) -> dict[str, dict]:
    return {k: v for k, v in checks.items() if k.startswith(deep.PREFIX)}


def test_every_claimed_property_is_a_deep_check_of_its_lesson():
    for lesson_id, props in PROPERTIES.items():
        ids = {c.id for c in LESSONS[lesson_id].checks if c.deep and c.id.startswith(deep.PREFIX)}
        assert ids == {deep.PREFIX + p.id for p in props if p.claimed}, lesson_id


@pytest.mark.parametrize(("variant", "verdict"), [("buggy", "bug"), ("fixed", "ok")])
def test_default_run_explores_the_lesson(capsys, variant, verdict):
    # A one-lesson run takes its lesson's part of --budget (about a fourteenth), the exploration
    # 40% of it: 150 gives it 4 s for an exhaustive search of 7 interleavings (0.15 to 0.25 s
    # at load 4); the simulation plans runs from its 60% (80 runs, 5 to 6 s at load 4).
    checks = _checks(capsys, "--variant", variant, "--lesson", "live-set-race", "--budget", "150")
    (found,) = _explorations(checks).values()
    assert found["verdict"] == verdict, found["symptom"]
    assert "simulation" in checks  # its verdict is the simulation's business (tests/test_sim.py)
    if verdict == "bug":
        assert "replay: python -m reference --explore --lesson live-set-race" in found["symptom"]
    else:
        assert "holds over all" in found["symptom"] and "(exhaustive)" in found["symptom"]


STALE = [p.id for p in PROPERTIES["stale-bootstrap"] if p.claimed]


@pytest.mark.parametrize("prop", STALE)
@pytest.mark.parametrize(("variant", "verdict"), [("buggy", "bug"), ("fixed", "ok")])
def test_each_stale_bootstrap_exploration_as_a_check(capsys, variant, verdict, prop):
    """`--check explore-<property>`: that exploration alone, with the whole budget."""
    check_id = deep.PREFIX + prop
    checks = _checks(
        capsys, "--variant", variant, "--lesson", "stale-bootstrap", "--check", check_id, *BUDGET
    )
    assert set(checks) == {"exit", check_id} and checks["exit"] == 0
    assert checks[check_id]["verdict"] == verdict, checks[check_id]["symptom"]


@pytest.mark.parametrize(
    ("module", "check_id", "symptom"),
    [
        ("unlocked_invalidation_del", "explore-invalidation-vs-replacement", "fresh port"),
        ("unlocked_invalidation_pop", "explore-invalidation-vs-replacement", "fresh port"),
        ("unlocked_lookup", "explore-hit-vs-eviction", "KeyError"),
    ],
)
def test_an_unlocked_check_then_act_is_a_bug_in_the_default_run(capsys, module, check_id, symptom):
    impl = ("--impl", f"{FIXES}/{module}.py", "--lesson", "stale-bootstrap")
    found = _checks(capsys, *impl, "--check", check_id, *BUDGET)
    assert found["exit"] == 1  # expected ok, got bug
    assert found[check_id]["verdict"] == "bug" and symptom in found[check_id]["symptom"]
    quick = _checks(capsys, *impl, "--quick")
    assert quick["exit"] == 0, "the story and the hand-built checks miss it"


def test_quick_leaves_the_deep_checks_out(capsys):
    quick = _checks(capsys, "--variant", "fixed", "--lesson", "live-set-race", "--quick")
    full = _checks(capsys, "--variant", "fixed", "--lesson", "live-set-race", *BUDGET)
    assert not _explorations(quick) and set(_explorations(full)) == {"explore-every-affected-room-failed"}
    assert set(quick) < set(full)


def test_a_search_that_stops_at_its_bound_is_unknown_never_ok():
    (prop,) = [p for p in PROPERTIES["stale-bootstrap"] if p.id == "invalidation-vs-replacement"]
    finding = deep.explore_within(prop, shipped("fixed").module, seconds=0.01)
    assert finding.verdict == "unknown" and "stopped at the 0.01 s bound" in finding.symptom


def test_the_exhaustive_round_runs_when_the_share_allows():
    prop = PROPERTIES["live-set-race"][0]  # every-affected-room-failed
    assert prop.bound is None
    finding = deep.explore_within(prop, shipped("fixed").module, seconds=30.0)
    assert finding.verdict == "ok" and "(exhaustive)" in finding.symptom


def test_an_exhaustive_round_cut_short_keeps_the_bounded_claim_and_says_where_it_stopped():
    """Hardened's bookkeeping multiplies the interleavings: bound 1 finishes, the
    exhaustive search does not, and the verdict says which one held."""
    (prop,) = [p for p in PROPERTIES["stale-bootstrap"] if p.id == "stale-generation-replaced"]
    finding = deep.explore_within(prop, shipped("hardened").module, seconds=4.0)
    assert finding.verdict == "ok" and finding.bound == 1, finding.symptom
    assert "(preemption bound 1); the exhaustive search stopped after" in finding.symptom


def test_the_exploration_leaves_frontrun_environment_as_it_found_it(monkeypatch):
    monkeypatch.delenv("FRONTRUN_ACTIVE", raising=False)
    prop = PROPERTIES["live-set-race"][0]  # every-affected-room-failed
    assert deep.explore_within(prop, shipped("buggy").module, seconds=30.0).verdict == "bug"
    assert "FRONTRUN_ACTIVE" not in os.environ


def test_lesson_budgets_follow_the_deep_checks():
    """`--budget` is for every lesson; each selected lesson gets its part of it, in
    proportion to its deep checks (a run of one lesson takes its part, not the whole)."""
    counts = {i: len(deep.deep_checks(lesson, Options())) for i, lesson in LESSONS.items()}
    every = deep.lesson_budgets(list(LESSONS.values()), 60.0, Options(), LESSONS.values())
    assert sum(every.values()) == pytest.approx(60.0)
    assert len({round(every[i] / n, 9) for i, n in counts.items() if n}) == 1  # the same per deep check
    assert all(every[i] == 0.0 for i, n in counts.items() if not n)
    one = deep.lesson_budgets([LESSONS["stale-bootstrap"]], 60.0, Options(), LESSONS.values())
    assert one == {"stale-bootstrap": pytest.approx(every["stale-bootstrap"])}
    assert deep.lesson_budgets([LESSONS["live-set-race"]], 60.0, Options(quick=True)) == {
        "live-set-race": 0.0
    }


def test_each_exploration_gets_a_fair_share_of_what_its_lesson_has_left(monkeypatch):
    """The simulation has its fixed share of the lesson's budget; the explorations share
    the rest, what one leaves going to the ones after it."""
    monkeypatch.setattr(deep, "_LEDGERS", {})
    ids = [
        c.id for c in deep.deep_checks(LESSONS["stale-bootstrap"], Options()) if c.id.startswith(deep.PREFIX)
    ]
    options = Options(budget=len(ids) / (1.0 - SIM_SHARE))  # the explorations' pool: 1 s each
    with deep.within("stale-bootstrap", ids[0], options) as first:
        assert first == pytest.approx(1.0)
    second = deep.share("stale-bootstrap", ids[1], options)
    assert 1.0 <= second <= len(ids) / (len(ids) - 1)  # the first's unspent time is shared
    with deep.within("stale-bootstrap", ids[0], options) as again:  # a new run of the lesson
        assert again == pytest.approx(1.0)
    assert deep.ceiling("stale-bootstrap", ids[0], options) == pytest.approx(
        len(ids) - deep.RESERVE * (len(ids) - 1)
    )
    alone = Options(budget=3.0, check=ids[0])  # only this check runs: all of the budget
    assert deep.share("stale-bootstrap", ids[0], alone) == pytest.approx(3.0)


def test_explorations_leave_upstream_releases_to_explore():
    adapter = types.ModuleType("sglang_like")
    adapter.DECIDE = lambda *args: None  # what marks the upstream adapter
    check = next(c for c in LESSONS["live-set-race"].checks if c.id.startswith(deep.PREFIX))
    assert not deep.runs_on(check, Variant("sglang-x", adapter, "ok"))
    assert deep.runs_on(check, shipped("fixed"))
    assert deep.runs_on(
        Check("simulation", "", "", lambda m, o: None, deep=True), Variant("x", adapter, "ok")
    )


def test_replay_of_a_missing_file_is_one_line(capsys, tmp_path):
    assert main(["--replay", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_replay_of_a_bad_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not a counterexample")
    assert main(["--replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m reference") and "error: " in err


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_bad_budget_is_one_line(capsys, value):
    with pytest.raises(SystemExit) as caught:
        main(["--budget", value])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.count("\n") == 1 and "argument --budget: expected seconds" in err
