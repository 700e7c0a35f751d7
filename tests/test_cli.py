"""The CLI contract: table, JSON, exit codes (bad input: tests/test_cli_bad_input.py)."""

import json

from reference.cli import exit_code, main
from reference.harness.result import Result
from reference.lessons import LESSONS
from reference.variants import SHIPPED


def test_json_lists_every_lesson_with_expected_verdicts(capsys):
    assert main(["--json", "--quick", "--lesson", "failed-resurrect", "--lesson", "live-set-race"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    got = {(r["lesson"], r["variant"]): r["verdict"] for r in results}
    assert got == {
        ("failed-resurrect", "buggy"): "bug",
        ("failed-resurrect", "fixed"): "ok",
        ("failed-resurrect", "hardened"): "ok",
        ("live-set-race", "buggy"): "bug",
        ("live-set-race", "fixed"): "ok",
        ("live-set-race", "hardened"): "ok",
    }
    keys = {"lesson", "variant", "transport", "sockets", "verdict", "expected", "symptom", "seconds"}
    keys.add("checks")
    assert set(results[0]) == keys
    assert results[0]["checks"][0]["id"] == "story"


def test_table_is_the_default_output(capsys):
    assert main(["--lesson", "failed-resurrect", "--variant", "fixed", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:5] == ["lesson", "variant", "transport", "verdict", "expected"]
    assert "failed-resurrect  fixed" in out


def _result(verdict: str, expected: str) -> Result:
    return Result("l", "v", "mock", verdict, expected, "")  # type: ignore[arg-type]


def test_exit_codes():
    assert exit_code([_result("bug", "bug"), _result("ok", "ok")]) == 0
    assert exit_code([_result("ok", "bug"), _result("ok", "ok")]) == 1
    assert exit_code([_result("unknown", "ok"), _result("ok", "bug")]) == 2


def test_in_process_gives_the_same_verdicts_as_the_isolated_workers(capsys):
    verdicts = []
    for extra in ([], ["--in-process"]):
        assert main(["--json", "--quick", *extra]) == 0
        results = json.loads(capsys.readouterr().out)["results"]
        verdicts.append([(r["lesson"], r["variant"], r["verdict"]) for r in results])
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) == len(LESSONS) * len(SHIPPED)
