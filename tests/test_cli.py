"""The CLI contract: table, JSON, exit codes, one-line errors."""

import json
import subprocess
import sys

import pytest

from reference.cli import exit_code, main
from reference.harness.result import Result


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reference", *args], capture_output=True, text=True, timeout=60
    )


def test_json_lists_every_lesson_with_expected_verdicts(capsys):
    assert main(["--json", "--lesson", "failed-resurrect", "--lesson", "live-set-race"]) == 0
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
    assert set(results[0]) == {
        "lesson", "variant", "transport", "sockets", "verdict", "expected", "symptom", "seconds"
    }  # fmt: skip


def test_table_is_the_default_output(capsys):
    assert main(["--lesson", "failed-resurrect", "--variant", "fixed"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:5] == ["lesson", "variant", "transport", "verdict", "expected"]
    assert "failed-resurrect  fixed" in out


def _result(verdict: str, expected: str) -> Result:
    return Result("l", "v", "mock", verdict, expected, "")  # type: ignore[arg-type]


def test_exit_codes():
    assert exit_code([_result("bug", "bug"), _result("ok", "ok")]) == 0
    assert exit_code([_result("ok", "bug"), _result("ok", "ok")]) == 1
    assert exit_code([_result("unknown", "ok"), _result("ok", "bug")]) == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--lesson", "nope"], "invalid choice: 'nope' (choose from"),
        (["--variant", "nope"], "invalid choice: 'nope' (choose from 'buggy', 'fixed', 'hardened')"),
        (["--transport", "udp"], "invalid choice: 'udp'"),
        (["--seed", "x"], "expected an integer, got 'x'"),
        (["--repeat", "-1"], "expected an integer >= 0"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--impl", "no_such_module_here"], "cannot import --impl module 'no_such_module_here'"),
    ],
)
def test_bad_input_gets_one_line_and_exit_2(args, needle):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_impl_without_the_classes_is_unknown_not_a_traceback():
    proc = run_cli("--impl", "reference.status", "--lesson", "failed-resurrect", "--json")
    assert proc.returncode == 2
    (result,) = json.loads(proc.stdout)["results"]
    assert (result["verdict"], result["symptom"]) == ("unknown", "variant lacks KVManager")
