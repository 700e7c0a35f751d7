"""The explorations (reference/explore): counterexamples on the buggy form and on wrong
fixes, the replay of a counterexample, the unclaimed residual, and the CLI's errors.

That every property holds on the fixed form is `tests/test_explore_impl.py`.
"""

import pytest
from explore_run import REPO, explore_json, run_cli

from reference.cli import main
from reference.explore import PROPERTIES

# What each property's counterexample shows on the buggy form.
BUGGY_SYMPTOMS = {
    "every-affected-room-failed": "RuntimeError: Set changed size during iteration",
    "late-failed-after-clear": "cleared room 7 re-created as Failed",
    "stale-generation-replaced": "port 2001 stays cached after",
    "concurrent-fill-then-restart": "port 2001 stays cached after",
    "invalidation-vs-replacement": "port 2001 stays cached after",
    "hit-vs-eviction": "KeyError",
    "invalidation-vs-other-eviction": "port 2001 stays cached after",
    "fill-vs-other-eviction": "RuntimeError: dictionary changed size during iteration",
    "cp-rank-route-fails": "but the cache keeps",
    "cp-rank-refuses": "but the cache keeps",
    "late-cleanup-keeps-new-set": "of the re-registered prefill is tracked nowhere",
    "late-cleanup-keeps-reused-room": "reused by a new request, is tracked nowhere",
    "late-cleanup-keeps-equal-set": "reused by a new request, is tracked nowhere",
    "cleanup-untracks-finished-room": "of a new request on the same prefill is tracked nowhere",
    "no-record-after-clear": "keeps a failure record",
}

# Tempting wrong fixes from the lessons' galleries (reference/lessons/<id>/wrong_fixes) and the
# property that must catch each.
WRONG_FIXES = [
    ("by_key", "stale-bootstrap", "stale-generation-replaced", "but the cache ends with nothing"),
    ("last_writer_wins", "stale-bootstrap", "concurrent-fill-then-restart", "port 2001 stays cached"),
    ("live_set_pop", "live-set-race", "every-affected-room-failed", "Set changed size during iteration"),
]


def test_every_claimed_property_has_a_symptom():
    claimed = {p.id for props in PROPERTIES.values() for p in props if p.claimed and not p.hardened_only}
    assert claimed == set(BUGGY_SYMPTOMS)


def test_buggy_gives_a_counterexample_for_every_claimed_property():
    run = run_cli("--variant", "buggy", "--json", reexec=True)  # the CLI arranges frontrun itself
    assert run.returncode == 0, run.stderr  # every claimed verdict is the expected `bug`
    for finding in run.findings():
        if finding["expected"] is None:
            continue
        name = f"{finding['lesson']}/{finding['property']}"
        assert finding["verdict"] == "bug", f"{name}: {finding['symptom']}"
        assert BUGGY_SYMPTOMS[finding["property"]] in finding["symptom"], name
        assert finding["schedule"] and finding["interleavings"] >= 1, name
        lanes = [line for line in finding["trace"].splitlines() if line.startswith("T0 ")]
        (prop,) = [p for p in PROPERTIES[finding["lesson"]] if p.id == finding["property"]]
        two = len(prop.workers) > 1  # the CP worlds of stale-bootstrap run one request
        assert lanes and (" T1 " in lanes[0] or not two), f"{name}: no two-lane header in the trace"


def test_replaying_the_counterexample_reproduces_it():
    (found,) = explore_json(
        "--variant", "buggy", "--lesson", "live-set-race", "--property", "every-affected-room-failed"
    )
    args = ("--variant", "buggy", "--lesson", "live-set-race", "--property", found["property"])
    replayed = run_cli(*args, "--replay", found["schedule"])
    assert replayed.returncode == 1, replayed.stderr
    assert "RuntimeError: Set changed size during iteration" in replayed.stdout
    assert "T0 heartbeat" in replayed.stdout and "T1 mori-cleanup" in replayed.stdout


@pytest.mark.parametrize(
    ("module", "lesson", "prop", "symptom"), WRONG_FIXES, ids=[w[0] for w in WRONG_FIXES]
)
def test_wrong_fix_is_caught(module, lesson, prop, symptom):
    impl = f"{REPO}/reference/lessons/{lesson.replace('-', '_')}/wrong_fixes/{module}.py"
    (finding,) = explore_json("--impl", impl, "--lesson", lesson, "--property", prop)
    assert finding["verdict"] == "bug", finding["symptom"]
    assert symptom in finding["symptom"]


UNCLAIMED = [
    # Upstream's fix checks and writes without a lock: a clear() in between still lets a
    # Failed re-create the room.
    ("failed-resurrect", "atomic-against-clear", "re-created as Failed"),
    # The failure handler checks `room in request_status`, then reads it: a clear() in
    # between raises KeyError in the heartbeat thread.
    ("live-set-race", "failure-vs-clear", "thread died: heartbeat: KeyError: 3"),
]


@pytest.mark.parametrize(("lesson", "prop", "symptom"), UNCLAIMED, ids=[u[1] for u in UNCLAIMED])
def test_unclaimed_residual_is_reported_not_judged(lesson, prop, symptom):
    """A race upstream's fix leaves: reported with its counterexample; exit status 0."""
    run = run_cli("--variant", "fixed", "--lesson", lesson, "--property", prop, "--json")
    (finding,) = run.findings()
    assert (finding["verdict"], finding["expected"], finding["claimed"]) == ("bug", None, False)
    assert symptom in finding["symptom"] and run.returncode == 0


def test_without_frontrun_one_line_error(tmp_path):
    fake = tmp_path / "frontrun"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('frontrun is not installed')\n")
    run = run_cli("--lesson", "live-set-race", env={"PYTHONPATH": f"{tmp_path}:{REPO}"}, reexec=True)
    assert run.returncode == 2
    assert run.stderr.startswith("python -m reference: error: --explore needs frontrun")
    assert len(run.stderr.strip().splitlines()) == 1


LIVE_SET = ("--lesson", "live-set-race", "--property", "every-affected-room-failed")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--lesson", "task-refs"), "no exploration for lesson task-refs"),
        (("--property", "nope"), "no property 'nope'"),
        (("--variant", "buggy", *LIVE_SET, "--replay", "0x1,zz"), "bad schedule step 'zz'"),
        (("--variant", "buggy", *LIVE_SET, "--replay", "2x1"), "bad schedule step '2x1'"),
        (("--replay", "0x1"), "--replay needs exactly one property"),
        (("--lesson", "live-set-race", "--replay", "0x1"), "--replay needs exactly one property"),
        ((*LIVE_SET, "--replay", "0x1"), "--replay needs exactly one variant"),
    ],
)
def test_bad_input_one_line_error(capsys, args, message):
    assert main(["--explore", *args]) == 2  # caught before any exploration or re-execution
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
