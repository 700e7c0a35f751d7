"""`--sglang --explore`: the explorations run on upstream's own code, and decide.

frontrun switches threads inside upstream's methods (`_handle_node_failure`, mori's
`_cleanup_room_tracking`, `CommonKVReceiver.clear`, `update_status`); no hook point and
no override places the race. Before the #36351 fix (0.5.18) the heartbeat dies on the
live set's iteration; from the fix on it holds, exhaustively. 0.5.18's lesson is
`latent` (its wiring never runs mori's cleanup with the heartbeat), and an exploration
runs them together, as `--provoke` does: `bug` is expected of it. The failed-resurrect
claim holds from the #24539 fix (0.5.12) on and fails before it.
"""

from __future__ import annotations

import pytest
from explore_run import run_cli
from upstream_wheels import NEWEST, wheel

CASES = [
    ("0.5.18", "live-set-race", "every-affected-room-failed", "bug", "Set changed size during iteration"),
    ("0.5.19", "live-set-race", "every-affected-room-failed", "ok", "(exhaustive)"),
    (NEWEST, "live-set-race", "every-affected-room-failed", "ok", "(exhaustive)"),
    ("0.5.11", "failed-resurrect", "late-failed-after-clear", "bug", "re-created as Failed"),
    ("0.5.19", "failed-resurrect", "late-failed-after-clear", "ok", "(exhaustive)"),
    (NEWEST, "failed-resurrect", "late-failed-after-clear", "ok", "(exhaustive)"),
]


LONG = {(NEWEST, "live-set-race")}  # 959 interleavings, about 32 s idle: the 30 s default cuts it
LONG_SECONDS = 120


@pytest.mark.timeout(LONG_SECONDS + 60)
@pytest.mark.parametrize(("version", "lesson", "prop", "verdict", "symptom"), CASES)
def test_an_exploration_of_upstreams_code_decides(version, lesson, prop, verdict, symptom) -> None:
    long = (version, lesson) in LONG
    env = {"REFERENCE_EXPLORE_SECONDS": str(LONG_SECONDS)} if long else None
    args = ("--sglang", str(wheel(version)), "--lesson", lesson, "--property", prop, "--json")
    run = run_cli(*args, env=env, bound=LONG_SECONDS + 30 if long else 55.0)
    (finding,) = run.findings()
    assert (finding["verdict"], finding["expected"]) == (verdict, verdict), finding["symptom"]
    assert symptom in finding["symptom"] and run.returncode == 0, finding["symptom"]


def test_the_residual_clear_race_is_upstreams_too() -> None:
    """The failure handler's check-then-read of the status table against the scheduler's
    clear, on the newest release: upstream's own `CommonKVReceiver.clear` pops the status
    between them and the heartbeat thread dies. Reported, not judged."""
    run = run_cli(
        "--sglang",
        str(wheel(NEWEST)),
        "--lesson",
        "live-set-race",
        "--property",
        "failure-vs-clear",
        "--json",
    )
    (finding,) = run.findings()
    assert (finding["verdict"], finding["expected"], finding["claimed"]) == ("bug", None, False)
    assert "thread died: heartbeat: KeyError" in finding["symptom"] and run.returncode == 0
    assert (
        "--sglang "
        in run_cli(
            "--sglang", str(wheel(NEWEST)), "--lesson", "live-set-race", "--property", "failure-vs-clear"
        ).stdout
    )
