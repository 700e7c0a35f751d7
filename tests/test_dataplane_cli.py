"""`--backend NAME`: which lessons take it, and how an absent backend is reported."""

import dataclasses

import pytest

import reference.dataplane.discovery as discovery
from reference.cli import format_table, main
from reference.harness.result import Observation
from reference.lessons import LESSONS, Options, run_lesson
from reference.variants import shipped


def test_lessons_without_a_data_plane_are_skipped_by_name(capsys):
    assert main(["--backend", "nixl", "--lesson", "failed-resurrect"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "skipped failed-resurrect: moves no KV bytes over backend nixl",
        "python -m reference: error: no selected lesson runs on mock with backend nixl",
    ]


@pytest.fixture
def kv_lesson():
    """A lesson that moves KV bytes over any backend and reports which one it got."""
    body = lambda _variant, options: Observation("ok", f"bytes over {options.backend}")  # noqa: E731
    base = LESSONS["failed-resurrect"]
    return dataclasses.replace(base, body=body, backends=discovery.BACKENDS, transports=("mock", "loopback"))


def test_an_absent_backend_is_unknown_with_its_reason(kv_lesson, monkeypatch):
    missing = discovery.BackendStatus("mooncake", False, "module mooncake missing (pip install ...)")
    monkeypatch.setattr(discovery, "backend_status", lambda _name: missing)
    result = run_lesson(kv_lesson, shipped("fixed"), Options(transport="loopback", backend="mooncake"))
    assert (result.verdict, result.symptom) == (
        "unknown",
        "backend mooncake unavailable: module mooncake missing (pip install ...)",
    )


def test_the_backend_shows_in_json_and_table_only_when_asked_for(kv_lesson):
    fixed = shipped("fixed")
    plain = run_lesson(kv_lesson, fixed, Options(transport="loopback"))
    over = run_lesson(kv_lesson, fixed, Options(transport="loopback", backend="default"))
    assert "backend" not in plain.to_json() and "backend" not in over.to_json()
    real = run_lesson(kv_lesson, fixed, Options(transport="loopback", backend="torch"))
    if real.verdict == "ok":
        assert real.to_json()["backend"] == "torch" and real.symptom == "bytes over torch"
        assert "loopback+torch" in format_table([real])
    else:
        assert real.symptom.startswith("backend torch unavailable: ")


def test_a_real_backend_needs_the_loopback_transport(kv_lesson):
    result = run_lesson(kv_lesson, shipped("fixed"), Options(transport="mock", backend="nixl"))
    assert (result.verdict, result.symptom) == (
        "unknown",
        "backend nixl moves bytes between processes: use --transport loopback",
    )
