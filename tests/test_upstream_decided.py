"""What decided each upstream verdict, from the run's line coverage
(`reference/upstream/coverage.py`): on the four fix lessons no verdict is
`adapter-decided`, on any release with a wheel here, and the committed
`VERSIONS.json` (every release 0.5.11 to 0.5.23) holds none either."""

from __future__ import annotations

import json

import pytest
from upstream_wheels import VERSIONS, wheel

from reference.harness.result import Result
from reference.lessons import LESSONS, Options
from reference.upstream import FIRST_FIXED, load_sglang
from reference.upstream.coverage import Decision, _decision, _Tracer, decided, label
from reference.upstream.matrix import OUT_JSON


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("lesson", sorted(FIRST_FIXED))
def test_no_fix_lesson_verdict_is_adapter_decided(version: str, lesson: str) -> None:
    result, decision = decided(LESSONS[lesson], load_sglang(str(wheel(version))), Options())
    assert decision.deciding_ran, decision.summary()
    assert label(result, decision) == result.verdict == result.expected, decision.summary()
    assert any(lines for lines in decision.upstream.values())


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
    decision = _decision(variant.module, "live-set-race", _result("ok"), tracer)
    assert not decision.deciding_ran and decision.adapter_decided
    assert label(_result("ok"), decision) == "adapter-decided"


def test_a_stand_in_in_a_bug_run_is_adapter_decided() -> None:
    variant = load_sglang(str(wheel("0.5.19")))
    tracer = _Tracer()
    deciding = _decision(variant.module, "live-set-race", _result("ok"), tracer).deciding
    file, line = deciding.split(" ", 1)[0].rsplit(":", 1)
    tracer.upstream[file] = {int(line)}
    tracer.functions.add(("manager.py", "_discard_without_the_lock"))
    assert not _decision(variant.module, "live-set-race", _result("ok"), tracer).adapter_decided
    decision: Decision = _decision(variant.module, "live-set-race", _result("bug"), tracer)
    assert decision.adapter_decided and decision.stand_ins
