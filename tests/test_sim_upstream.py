"""The cluster simulation (`reference/sim`) drives upstream's own classes.

On an upstream release the simulation runs upstream's receivers and managers as it runs
ours: generated workloads and faults, the same invariants. These tests show it tells the
releases apart as their history says (0.5.11 before #24539 and #36029, 0.5.19 with both
fixes), that its whole-state bound leaves out only what the adapter declares
(`SIM_OPAQUE`: upstream's ZMQ connect cache, which our variants keep in the transport),
that what it found on the newest release (a late abort of a request that ended Success
keeps a failure record) is what the lesson's story now shows, and that an upstream
counterexample replays from its file.
"""

import pytest
from upstream_wheels import wheel

from reference.cli import main
from reference.lessons import LESSONS, Options, run_lesson
from reference.sim.invariants import checked_by
from reference.sim.profiles import PROFILES
from reference.sim.replay import replay_file
from reference.sim.report import save
from reference.sim.search import search
from reference.upstream import load_sglang

pytestmark = pytest.mark.upstream
BUDGET = 4.0  # seconds: the search plans an upstream release's floor, 30 runs, at least


def _search(version: str, lesson: str):
    module = load_sglang(str(wheel(version))).module
    return module, search(module, PROFILES[lesson], "upstream", 0, BUDGET, frozenset(checked_by(lesson)))


@pytest.mark.parametrize(
    ("version", "lesson", "invariant"),
    [
        ("0.5.11", "failed-resurrect", "cleared-stays-cleared"),
        # 0.5.11's send_metadata connects outside its try: the drain's refused connect raises
        ("0.5.11", "stale-bootstrap", "no-raise"),
    ],
)
def test_the_simulation_finds_the_defect_before_its_fix(version, lesson, invariant):
    _, outcome = _search(version, lesson)
    assert outcome.verdict == "bug", outcome
    assert outcome.failing is not None and outcome.failing.violation.invariant == invariant


@pytest.mark.parametrize("lesson", ["failed-resurrect", "live-set-race", "stale-bootstrap"])
def test_the_simulation_holds_on_the_fixed_release(lesson):
    """stale-bootstrap's runs restart prefills on new ports: upstream's class-level socket
    cache then keeps the old endpoints' sockets, which the bound must leave out."""
    _, outcome = _search("0.5.19", lesson)
    assert outcome.verdict == "ok", outcome.failing and outcome.failing.violation


def test_upstream_socket_cache_is_left_out_by_name_only():
    module = load_sglang(str(wheel("0.5.19"))).module
    assert {"_socket_cache", "_socket_locks"} <= set(module.SIM_OPAQUE)
    receiver = module.KVReceiver
    assert any("_socket_cache" in vars(klass) for klass in receiver.__mro__), "upstream renamed its cache"


def test_a_late_abort_after_success_keeps_a_record_on_the_newest_release():
    result = run_lesson(LESSONS["failure-records"], load_sglang(str(wheel("0.5.23"))), Options())
    assert result.verdict == "bug"
    assert "failure_records 200" in result.symptom, result.symptom  # the 200 cycles that ended Success


def test_an_upstream_counterexample_replays(tmp_path, capsys):
    module, outcome = _search("0.5.11", "failed-resurrect")
    assert outcome.failing is not None
    path = save(outcome.failing, "failed-resurrect", module, str(tmp_path))
    assert main(["--replay", str(path)]) == 1  # the CLI loads the release the file names
    assert "sglang-0.5.11" in capsys.readouterr().out
    assert replay_file(str(path)) == 2  # the simulation alone cannot load an upstream release
    assert "replay it with python -m reference --replay" in capsys.readouterr().err
