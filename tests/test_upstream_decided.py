"""What decided each upstream verdict, from the run's line coverage
(`reference/upstream/coverage.py`): on the four fix lessons no verdict of
`python -m reference --sglang WHEEL` is `adapter-decided` (its `--json`, for every
boundary release with a wheel here), the committed `VERSIONS.json` (every release
0.5.11 to 0.5.23) holds none either, and the label is measured from the run: the same
run with a deciding line that does not execute is labelled `adapter-decided` in the
table and in `--json`, whatever its symptom says."""

from __future__ import annotations

import json

import pytest
from upstream_wheels import VERSIONS, wheel

from reference import cli
from reference.harness.result import Result
from reference.lessons import LESSONS, Options
from reference.upstream import FIRST_FIXED, coverage, load_sglang
from reference.upstream.coverage import Decision, _decision, _Tracer, decided, label
from reference.upstream.matrix import OUT_JSON


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = cli.main([*args, "--in-process", "--quick"])
    return status, capsys.readouterr().out


def _json_rows(capsys: pytest.CaptureFixture[str], version: str, *lessons: str) -> list[dict]:
    status, out = _cli(capsys, "--sglang", str(wheel(version)), "--json", "--lesson", *lessons)
    assert status == 0, out
    return json.loads(out)["results"]


@pytest.mark.parametrize("version", VERSIONS)
def test_no_fix_lesson_verdict_of_the_cli_is_adapter_decided(capsys, version: str) -> None:
    rows = _json_rows(capsys, version, "fixes")
    assert sorted(r["lesson"] for r in rows) == sorted(FIRST_FIXED)
    for row in rows:
        measured = row["decided_by"]
        assert measured["deciding_ran"], row
        assert row["label"] == row["verdict"] == row["expected"], row
        assert sum(measured["upstream_lines"].values()) > 0, row
        assert not measured["adapter_decided"], row


def test_the_label_is_measured_from_the_run_not_from_text(capsys, monkeypatch) -> None:
    """The same lesson, the same symptom; only whether the deciding line executed
    differs: line 1 of the deciding file (run at load, never during a check)."""
    version = wheel("0.5.19")
    _, table = _cli(capsys, "--sglang", str(version), "--lesson", "failed-resurrect", "--verbose")
    real = coverage.deciding_line

    def line_one(module, lesson_id):  # the same file, a line no check executes
        where, _, what = real(module, lesson_id).partition(" ")
        return f"{where.rpartition(':')[0]}:1 {what}"

    monkeypatch.setattr(coverage, "deciding_line", line_one)
    _, moved = _cli(capsys, "--sglang", str(version), "--lesson", "failed-resurrect", "--verbose")
    row = _json_rows(capsys, "0.5.19", "failed-resurrect")[0]
    assert "adapter-decided" not in table
    assert " ok (adapter-decided) " in moved
    assert "  adapter-decided  by line coverage: the upstream line it turns on did not run" in moved
    assert table.splitlines()[1].rsplit("  ", 1)[1] == moved.splitlines()[1].rsplit("  ", 1)[1]  # symptom
    assert row["label"] == "adapter-decided" and row["verdict"] == "ok"
    assert row["decided_by"]["deciding"].split(" ", 1)[0].endswith(":1")
    assert not row["decided_by"]["deciding_ran"]


@pytest.mark.parametrize("lesson", sorted(FIRST_FIXED))
def test_decided_joins_the_checks_the_lesson_ran(lesson: str) -> None:
    result, decision = decided(LESSONS[lesson], load_sglang(str(wheel("0.5.23"))), Options(quick=True))
    assert decision.deciding_ran, decision.summary()
    assert label(result, decision) == result.verdict == result.expected, decision.summary()
    per_check = [c.details["decided_by"] for c in result.checks]
    assert per_check and all(isinstance(d, Decision) for d in per_check)
    joined = {f: set().union(*(d.upstream.get(f, set()) for d in per_check)) for f in decision.upstream}
    assert joined == decision.upstream


def test_the_committed_matrix_json_has_no_adapter_decided_fix_verdict() -> None:
    rows = json.loads(OUT_JSON.read_text())
    releases = {row["release"] for row in rows}
    assert {"0.5.11", "0.5.19", "0.5.23"} <= releases and len(releases) >= 16
    decided_by_adapter = [r for r in rows if r["lesson"] in FIRST_FIXED and r["label"] == "adapter-decided"]
    assert decided_by_adapter == []
    assert all(r["decided_by"]["deciding_ran"] for r in rows if r["lesson"] in FIRST_FIXED)


def _result(verdict: str) -> Result:
    return Result(lesson="live-set-race", variant="sglang-0.5.23", transport="mock", verdict=verdict,
                  expected="ok", symptom="")  # fmt: skip


def test_a_deciding_line_that_did_not_run_is_adapter_decided() -> None:
    variant = load_sglang(str(wheel("0.5.19")))
    tracer = _Tracer()  # nothing traced: the deciding line did not run
    decision = _decision(variant.module, "live-set-race", "ok", tracer)
    assert not decision.deciding_ran and decision.adapter_decided
    assert label(_result("ok"), decision) == "adapter-decided"


def test_a_stand_in_in_a_bug_run_is_adapter_decided() -> None:
    variant = load_sglang(str(wheel("0.5.19")))
    deciding = _decision(variant.module, "live-set-race", "ok", _Tracer()).deciding
    file, line = deciding.split(" ", 1)[0].rsplit(":", 1)

    def tracer() -> _Tracer:
        made = _Tracer()
        made.upstream[file] = {int(line)}
        made.functions.add(("manager.py", "_discard_without_the_lock"))
        return made

    assert not _decision(variant.module, "live-set-race", "ok", tracer()).adapter_decided
    decision: Decision = _decision(variant.module, "live-set-race", "bug", tracer())
    assert decision.adapter_decided and decision.stand_ins
