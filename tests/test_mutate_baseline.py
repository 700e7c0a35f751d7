"""The semantic mutation's baselines and child runs (reference/mutate/runner.py), on canned
runs: two runs of an unmutated copy that disagree stop the run, naming the verdicts and
what each run said; a verdict one run left `unknown` at a time bound takes the other
run's; a mutant that differs only where the baseline stayed undecided is no kill; and
`run_reference`, the one child-process helper, serves `run_impl` and upstream's
`explore_run` alike."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from reference.mutate import runner
from reference.mutate.runner import Judge, RunError, agree, run_impl, run_reference
from reference.upstream import mutate as upstream_mutate

LESSONS = ("live-set-race", "stale-bootstrap")
BOUND = "no counterexample in 7 interleavings, but stopped at the 0.391 s bound (0.44 s)"


def _payload(**checks: tuple[str, str]) -> dict[str, Any]:
    """`--json` results: each keyword `lesson__check=(verdict, symptom)`; a lesson's verdict
    is its checks' (bug, else unknown, else ok)."""
    lessons: dict[str, list[dict[str, str]]] = {}
    for name, (verdict, symptom) in checks.items():
        lesson, check = name.replace("_", "-").split("--")
        lessons.setdefault(lesson, []).append({"id": check, "verdict": verdict, "symptom": symptom})
    results = []
    for lesson, found in lessons.items():
        verdicts = {c["verdict"] for c in found}
        verdict = next((v for v in ("bug", "unknown") if v in verdicts), "ok")
        results.append({"lesson": lesson, "verdict": verdict, "symptom": "", "checks": found})
    return {"results": results}


OK = _payload(live_set_race__story=("ok", "held"), stale_bootstrap__explore_hit=("ok", "holds over 20"))


def _judge_with(monkeypatch, tmp_path: Path, *payloads: dict[str, Any]) -> Judge:
    runs = iter(payloads)
    monkeypatch.setattr(runner, "impl_payload", lambda *args, **kwargs: ("ran", next(runs), ""))
    return Judge(workdir=tmp_path)


def test_a_baseline_that_varies_names_the_verdicts_and_what_each_run_said(monkeypatch, tmp_path) -> None:
    died = _payload(
        live_set_race__story=("bug", "heartbeat thread died: RuntimeError"),
        stale_bootstrap__explore_hit=("ok", "holds over 20"),
    )
    judge = _judge_with(monkeypatch, tmp_path, OK, died)
    with pytest.raises(RunError) as raised:
        judge.baseline("hardened", LESSONS)
    message = str(raised.value)
    assert "unmutated hardened on live-set-race, stale-bootstrap (default run)" in message
    assert "verdicts differ between two runs: " in message
    assert (
        "live-set-race/story: ok -> bug (run 1: held; run 2: heartbeat thread died: RuntimeError)" in message
    )
    assert "stale-bootstrap" not in message.split("two runs: ")[1]


def test_a_baseline_names_at_most_three_differences(monkeypatch, tmp_path) -> None:
    many = {f"live_set_race__c{i}": ("ok", "held") for i in range(5)}
    flipped = {name: ("bug", "broke") for name in many}
    judge = _judge_with(monkeypatch, tmp_path, _payload(**many), _payload(**flipped))
    with pytest.raises(
        RunError, match=r"live-set-race/c2: ok -> bug \(run 1: held; run 2: broke\) \(\+2 more\)$"
    ):
        judge.baseline("hardened", LESSONS)


def test_a_verdict_one_run_left_at_a_time_bound_takes_the_other_runs(monkeypatch, tmp_path) -> None:
    cut = _payload(live_set_race__story=("ok", "held"), stale_bootstrap__explore_hit=("unknown", BOUND))
    judge = _judge_with(monkeypatch, tmp_path, cut, OK)
    verdicts = judge.baseline("hardened", LESSONS)
    assert verdicts == {
        "live-set-race": "ok",
        "live-set-race/story": "ok",
        "stale-bootstrap": "ok",
        "stale-bootstrap/explore-hit": "ok",
    }
    assert len(judge.settled) == 1 and "stale-bootstrap/explore-hit: unknown -> ok" in judge.settled[0]


def test_an_undecided_verdict_that_is_no_time_bound_is_not_settled() -> None:
    raised = _payload(
        live_set_race__story=("ok", "held"), stale_bootstrap__explore_hit=("unknown", "raised KeyError: 3")
    )
    _, settled, differing = agree(raised, OK)
    assert not settled and differing == [
        "stale-bootstrap/explore-hit: unknown -> ok (run 1: raised KeyError: 3; run 2: holds over 20)"
    ]


def test_a_whole_lesson_at_its_time_bound_takes_the_other_runs() -> None:
    killed = {
        "lesson": "stale-bootstrap",
        "verdict": "unknown",
        "symptom": "hit its time bound (20 s) in scenario",
    }
    cut = {"results": [OK["results"][0], {**killed, "checks": []}]}
    verdicts, settled, differing = agree(OK, cut)
    assert not differing and verdicts == agree(OK, OK)[0] and len(settled) == 1


def test_a_mutant_that_differs_only_where_the_baseline_is_undecided_survives(monkeypatch, tmp_path) -> None:
    cut = _payload(live_set_race__story=("ok", "held"), stale_bootstrap__explore_hit=("unknown", BOUND))
    judge = _judge_with(monkeypatch, tmp_path, cut, cut)  # both baseline runs cut at the bound
    monkeypatch.setattr(runner, "run_impl", lambda *args, **kwargs: ("ran", runner._verdicts(OK), ""))
    source = (runner.ROOT / "reference" / "hardened" / "manager.py").read_text()
    mutant = SimpleNamespace(
        variant="hardened", key="k", file="manager.py", edit=SimpleNamespace(source=source), lessons=LESSONS
    )
    assert judge.judge(mutant).status == "survived"  # type: ignore[arg-type]


def _completed(stdout: str, stderr: str = "", returncode: int = 0):
    return lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, returncode, stdout, stderr)


def test_run_reference_parses_the_json_and_says_why_none_came(monkeypatch) -> None:
    monkeypatch.setattr(runner.subprocess, "run", _completed(json.dumps(OK)))
    assert run_reference(["--impl", "x", "--json"], 5.0) == ("ran", OK, "")
    assert run_reference(["--explore"], 5.0, key="explorations")[0] == "error"  # no such key
    monkeypatch.setattr(runner.subprocess, "run", _completed("", "Traceback ...\nImportError: no x", 2))
    assert run_reference(["--impl", "x"], 5.0) == ("error", {}, "ImportError: no x")
    assert run_impl(Path("x"), LESSONS, 5.0) == ("import-error", {}, "ImportError: no x")

    def hangs(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(runner.subprocess, "run", hangs)
    assert run_reference(["--impl", "x"], 5.0) == ("timeout", {}, "no result within 5 s")


def test_run_impl_and_upstreams_explore_run_share_the_child_run(monkeypatch) -> None:
    commands: list[list[str]] = []
    findings = {
        "explorations": [{"lesson": "stale-bootstrap", "property": "p", "verdict": "ok", "symptom": "holds"}]
    }

    def child(cmd, **kwargs):
        commands.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, json.dumps(findings if "--explore" in cmd else OK), "")

    monkeypatch.setattr(runner.subprocess, "run", child)
    assert run_impl(Path("copy"), LESSONS, 5.0)[1]["stale-bootstrap/explore-hit"] == "ok"
    found = upstream_mutate.explore_run(Path("tree"), (("stale-bootstrap", "p"),), 5.0)
    assert found == ("ran", {"stale-bootstrap/p": ("ok", "holds")}, "")
    assert [cmd[1:5] for cmd in commands] == [
        ["-m", "reference", "--impl", "copy"],
        ["-m", "reference", "--explore", "--sglang"],
    ]
