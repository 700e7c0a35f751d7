"""Proof of fidelity: upstream sglang's own classes, driven through the same
scenarios, give the verdicts upstream's history says they must.

- 0.5.11 (before #24539): `failed-resurrect` and `stale-bootstrap` are `bug`
  (its `_handle_node_failure` is mooncake's; its decode is answered with the
  parallel info its own server sent); `live-set-race` and `task-refs` are `latent`:
  the defect is there, but upstream's own wiring does not trigger it;
- 0.5.12 to 0.5.18: `failed-resurrect` is `ok`, the others as in 0.5.11;
- 0.5.19 and the newest release: every lesson is `ok`;
- with `--provoke` (`Options(provoke=True)`) every `latent` is `bug`, its trigger named;
- what the fixes leave open (the residual lessons, `RESIDUAL`): `restart-recovery`,
  `room-reuse` and `supervised-loops` `bug` wherever they can run (the DP dispatcher
  arrived in 0.5.13), `failure-records` `bug` (0.5.23 closes it for requests that ended
  Failed, not for those that ended Success),
  `stale-tracker` `latent` until mori starts its heartbeat (0.5.19: `bug`) and `ok`
  once mori's cleanup is gone (0.5.20).

Wheels come from `bash ci/upstream.sh` (cached in `.cache/sglang/`); without them
these tests skip.
"""

import pytest
from upstream_wheels import NEWEST, VERSIONS, wheel

from reference.lessons import LESSONS, Options, run_lesson
from reference.upstream import load_sglang

pytestmark = pytest.mark.upstream

ALL = ("failed-resurrect", "live-set-race", "stale-bootstrap", "task-refs")
FIDELITY = {
    "0.5.11": {
        "failed-resurrect": "bug",
        "live-set-race": "latent",
        "stale-bootstrap": "bug",
        "task-refs": "latent",
    },
    "0.5.12": {
        "failed-resurrect": "ok",
        "live-set-race": "latent",
        "stale-bootstrap": "bug",
        "task-refs": "latent",
    },
    "0.5.18": {
        "failed-resurrect": "ok",
        "live-set-race": "latent",
        "stale-bootstrap": "bug",
        "task-refs": "latent",
    },
    "0.5.19": dict.fromkeys(ALL, "ok"),
    NEWEST: dict.fromkeys(ALL, "ok"),
}
OPEN = ("restart-recovery", "room-reuse", "failure-records", "supervised-loops")
RESIDUAL = {
    "0.5.11": {**dict.fromkeys(OPEN, "bug"), "supervised-loops": "unknown", "stale-tracker": "latent"},
    "0.5.12": {**dict.fromkeys(OPEN, "bug"), "supervised-loops": "unknown", "stale-tracker": "latent"},
    "0.5.18": {**dict.fromkeys(OPEN, "bug"), "stale-tracker": "latent"},
    "0.5.19": {**dict.fromkeys(OPEN, "bug"), "stale-tracker": "bug"},
    NEWEST: {**dict.fromkeys(OPEN, "bug"), "stale-tracker": "ok"},
}
CASES = [
    pytest.param(version, lesson, marks=pytest.mark.lesson(lesson), id=f"{version}-{lesson}")
    for version in VERSIONS
    for lesson in {**FIDELITY[version], **RESIDUAL[version]}
    if lesson in LESSONS
]


@pytest.mark.parametrize(("version", "lesson_id"), CASES)
def test_upstream_verdict(version, lesson_id):
    result = run_lesson(LESSONS[lesson_id], load_sglang(str(wheel(version))), Options())
    assert result.verdict == {**FIDELITY[version], **RESIDUAL[version]}[lesson_id], result.symptom
    assert result.as_expected, (result.verdict, result.expected)


@pytest.mark.parametrize("lesson_id", ["live-set-race", "task-refs"])
def test_provoke_turns_latent_into_bug_and_names_the_trigger(lesson_id):
    variant = load_sglang(str(wheel("0.5.18")), provoke=True)
    result = run_lesson(LESSONS[lesson_id], variant, Options(provoke=True))
    assert (result.verdict, result.expected) == ("bug", "bug")
    assert result.symptom.startswith("(provoked: ")


def test_latent_says_which_upstream_line_keeps_the_task_alive():
    result = run_lesson(LESSONS["task-refs"], load_sglang(str(wheel("0.5.18"))), Options())
    assert result.symptom.startswith(
        "the bare create_task is there (sglang/srt/disaggregation/common/conn.py:1789), "
        "but the task awaits asyncio.sleep, whose timer keeps it alive"
    )
    assert "Task was destroyed but it is pending!" in result.symptom  # what the trigger showed
    assert "bootstrap server: cleanup survived gc.collect()" in result.details["own_wiring"]


def test_latent_says_the_racing_cleanup_and_the_heartbeat_never_meet():
    result = run_lesson(LESSONS["live-set-race"], load_sglang(str(wheel("0.5.18"))), Options())
    assert result.symptom.startswith(
        "the racing cleanup (mori's _cleanup_room_tracking, sglang/srt/disaggregation/mori/conn.py:574) "
        "and the heartbeat do not run together in this release"
    )


def test_provoke_does_not_touch_a_fixed_release():
    result = run_lesson(
        LESSONS["task-refs"], load_sglang(str(wheel("0.5.19")), provoke=True), Options(provoke=True)
    )
    assert result.verdict == "ok" and "provoked" not in result.symptom


def test_0_5_11_abort_writes_no_failed():
    """The late abort is upstream's own `CommonKVReceiver.abort()`. In 0.5.11 it records
    the failure and concludes the receiver but writes nothing to `request_status`
    (#24522, which made it write Failed, shipped with its follow-up #24539 in 0.5.12):
    a late abort resurrects nothing there, and an aborted open request keeps its status,
    which is what gives 0.5.11 its `bug`."""
    result = run_lesson(LESSONS["failed-resurrect"], load_sglang(str(wheel("0.5.11"))), Options())
    checks = {check.id: check.verdict for check in result.checks}
    assert checks["story"] == "ok" and checks["open-room-takes-failed"] == "bug", checks
    assert (result.verdict, result.expected) == ("bug", "bug")


def test_0_5_11_runs_mooncakes_own_node_failure_handler():
    """0.5.11 keeps `_handle_node_failure` in the backends: mooncake's runs."""
    variant = load_sglang(str(wheel("0.5.11")))
    owner = next(c for c in variant.module.KVManager.__mro__[2:] if "_handle_node_failure" in vars(c))
    assert owner.__name__ == "MooncakeKVManager"
    assert "mooncake/conn.py" in owner._handle_node_failure.__code__.co_filename
    result = run_lesson(LESSONS["live-set-race"], variant, Options())
    assert "RuntimeError: Set changed size during iteration" in result.symptom


def test_0_5_18_heartbeat_dies_as_the_pr_describes():
    result = run_lesson(LESSONS["live-set-race"], load_sglang(str(wheel("0.5.18"))), Options())
    assert "RuntimeError: Set changed size during iteration" in result.symptom
    counts = {key: result.details[key] for key in ("first_failed", "heartbeat_alive", "later_failed")}
    assert counts == {"first_failed": 1, "heartbeat_alive": False, "later_failed": 0}


def test_0_5_18_race_fires_without_hooks_under_stress():
    result = run_lesson(LESSONS["live-set-race"], load_sglang(str(wheel("0.5.18"))), Options(repeat=5))
    assert result.details["stress"]["trials"] == 5  # the rate varies; only the hooked run decides
    assert result.verdict == "latent"


def test_0_5_19_fails_every_room_and_keeps_watching():
    result = run_lesson(LESSONS["live-set-race"], load_sglang(str(wheel("0.5.19"))), Options(check="story"))
    observed = {k: v for k, v in result.details.items() if k != "decided_by"}  # coverage.py's, per check
    assert observed == {"first_failed": 3, "heartbeat_alive": True, "later_failed": 2}


@pytest.mark.loopback
@pytest.mark.parametrize(("version", "verdict"), [("0.5.18", "latent"), ("0.5.19", "ok")])
def test_live_set_race_on_loopback(version, verdict):
    """Real prefill processes, the heartbeat probing their real /health over HTTP."""
    result = run_lesson(
        LESSONS["live-set-race"], load_sglang(str(wheel(version))), Options(transport="loopback")
    )
    assert result.verdict == verdict, result.symptom


def test_0_5_18_keeps_the_stale_ports_0_5_19_refetches():
    """PR #36029's own experiment: after the waiting timeout 0.5.18 still holds the key and the
    next request uses the old ports with 0 fetches; 0.5.19 empties it, re-fetches once
    per rank and uses the new ports."""
    result = run_lesson(LESSONS["stale-bootstrap"], load_sglang(str(wheel("0.5.18"))), Options())
    d = result.details
    assert result.symptom.startswith("0 of 5 requests succeeded after the prefill restart")
    assert (d["route_fetches_after"], d["successes_after"], d["stale_ports"]) == (0, 0, d["old_ports"])
    assert d["first_failure"].endswith("in KVPoll.WaitingForInput")  # upstream's own timeout record


def test_0_5_19_refetches_after_its_own_waiting_timeout():
    result = run_lesson(LESSONS["stale-bootstrap"], load_sglang(str(wheel("0.5.19"))), Options())
    d = result.details
    assert (d["failures_after"], d["successes_after"], d["route_fetches_after"]) == (1, 4, 2)
    assert d["first_failure"].endswith("in KVPoll.WaitingForInput") and d["bytes_verified"] == 7


@pytest.mark.parametrize(("version", "destroyed"), [("0.5.18", True), ("0.5.19", False)])
def test_task_refs_decides_from_the_bootstrap_server_and_says_what_it_skipped(version, destroyed):
    result = run_lesson(LESSONS["task-refs"], load_sglang(str(wheel(version))), Options())
    server = result.details["bootstrap server"]
    assert (server["destroyed"] == ["_cleanup_expired_entries"]) is destroyed
    assert server["rooms_left"] == ([8, 16] if destroyed else [0, 0])
    dispatcher = result.details["DP dispatcher"]  # upstream's own DPDispatcher, its watchdog on sentinels
    assert dispatcher["destroyed"] == [] and dispatcher["death_noticed"] is True


def test_0_5_11_has_no_dp_dispatcher_and_says_so():
    result = run_lesson(LESSONS["task-refs"], load_sglang(str(wheel("0.5.11"))), Options())
    assert "DP dispatcher: not driven (not present in sglang-0.5.11: DPDispatcher)" in result.symptom


@pytest.mark.parametrize("version", ["0.5.18", "0.5.19"])
def test_upstreams_own_sleeping_cleanup_survives_gc_in_both(version):
    """Upstream's own wiring: with its `asyncio.sleep` the bare task of 0.5.18 is held
    by the loop's timer heap (the probe alone, without `decide` adding the trigger)."""
    from reference.lessons.task_refs import bootstrap_probe

    finding = bootstrap_probe.probe(load_sglang(str(wheel(version))).module, "mock", None)
    assert finding.problems == [] and finding.details["rooms_left"] == [0, 0]


@pytest.mark.loopback
@pytest.mark.parametrize(("version", "verdict"), [("0.5.18", "latent"), ("0.5.19", "ok")])
def test_task_refs_on_loopback(version, verdict):
    """Rooms registered over real HTTP to upstream's own aiohttp site."""
    result = run_lesson(LESSONS["task-refs"], load_sglang(str(wheel(version))), Options(transport="loopback"))
    assert result.verdict == verdict, result.symptom


@pytest.mark.loopback
def test_stale_bootstrap_on_loopback_0_5_19(monkeypatch):
    """A real prefill process restarted; upstream's GET /route over real HTTP. A request
    to a stale port waits the answer bound (shortened here from 10 s) before the
    virtual clock passes upstream's waiting timeout."""
    from reference.lessons.stale_bootstrap import world

    monkeypatch.setattr(world, "ANSWER_WITHIN", 3.0)
    result = run_lesson(
        LESSONS["stale-bootstrap"], load_sglang(str(wheel("0.5.19"))), Options(transport="loopback")
    )
    assert result.verdict == "ok", result.symptom
    assert (result.details["failures_after"], result.details["route_fetches_after"]) == (1, 2)


@pytest.mark.parametrize("version", ["0.5.11", "0.5.12"])
def test_supervised_loops_says_the_dispatcher_is_not_there(version):
    result = run_lesson(LESSONS["supervised-loops"], load_sglang(str(wheel(version))), Options())
    assert result.symptom == f"not present in sglang-{version}: DPDispatcher"


def test_supervised_loops_fault_reaches_upstreams_own_watchdog():
    """The pool's broken exit reader raises in upstream's `_worker_watchdog` (at its
    `exitcode` read): the task ends, nothing logs it, the next death goes unnoticed."""
    result = run_lesson(LESSONS["supervised-loops"], load_sglang(str(wheel("0.5.19"))), Options())
    assert "only trace: 'Task exception was never retrieved'" in result.symptom
    assert result.details["death_noticed"] is False and result.details["routed_to_dead"] == 2


def test_stale_tracker_latent_names_mori_without_its_heartbeat():
    result = run_lesson(LESSONS["stale-tracker"], load_sglang(str(wheel("0.5.18"))), Options())
    assert result.symptom.startswith(
        "the stale cleanup (mori's _cleanup_room_tracking, sglang/srt/disaggregation/mori/conn.py:574) "
        "and the heartbeat do not run together in this release"
    )
    provoked = load_sglang(str(wheel("0.5.18")), provoke=True)
    result = run_lesson(LESSONS["stale-tracker"], provoked, Options(provoke=True))
    assert (result.verdict, result.expected) == ("bug", "bug") and "tracked nowhere" in result.symptom


def test_stale_tracker_ok_on_the_newest_comes_from_upstreams_own_cleanup():
    """From 0.5.20 the cleanup is upstream's `CommonKVReceiver.clear` (it never pops an
    address): `ok`. The same scenario on the same release with mori's old steps (the
    adapter's live-set-race trigger) loses the new prefill's room."""
    variant = load_sglang(str(wheel(NEWEST)))
    assert run_lesson(LESSONS["stale-tracker"], variant, Options()).verdict == "ok"
    triggers = variant.module.TRIGGERS
    with triggers.on("live-set-race"):
        old_steps = LESSONS["stale-tracker"].body(variant.module, Options())
    assert old_steps.verdict == "bug" and "tracked nowhere" in old_steps.symptom


@pytest.mark.parametrize(("version", "late_abort_lands"), [("0.5.19", True), (NEWEST, False)])
def test_room_reuse_newest_stops_the_late_abort_not_the_late_statuses(version, late_abort_lands):
    result = run_lesson(LESSONS["room-reuse"], load_sglang(str(wheel(version))), Options())
    assert ("a late abort of the room's previous request" in result.symptom) is late_abort_lands
    assert "2 late transfer statuses of the previous request made the new one" in result.symptom
