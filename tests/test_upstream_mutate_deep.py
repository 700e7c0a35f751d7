"""The deep stage of upstream mutation (`mutate._deeper`): a survivor judged again with its
lesson's default run is killed only by a verdict that differs from a decided one.

The unmutated tree's default run can itself stop at a time bound (the simulation's budget
on a loaded machine: `unknown`); a mutant whose run finished then reads `unknown -> ok`,
which is the baseline's bound, not the mutant: no kill, as in the lock stage
(`tests/test_upstream_mutate_locks.py`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reference.upstream import mutate

KEY = "failed-resurrect/simulation"


def _deeper(baseline: str, got: str, monkeypatch: pytest.MonkeyPatch, note: str = "") -> tuple[str, str]:
    monkeypatch.setattr(mutate, "run_impl", lambda *_args, **_kwargs: ("ran", {KEY: got}, note))
    mutant = SimpleNamespace(lesson="failed-resurrect")
    return mutate._deeper(Path("tree"), mutant, lambda _lesson: {KEY: baseline}, 1.0)  # type: ignore[arg-type]


def test_a_decided_difference_kills(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _deeper("ok", "bug", monkeypatch)[0] == "killed"


def test_the_unmutated_trees_bound_kills_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, how = _deeper("unknown", "ok", monkeypatch)
    assert outcome == mutate.SURVIVED and "undecided" in how


def test_the_mutants_bound_kills_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, _ = _deeper("ok", "unknown", monkeypatch, note="simulation: the time ran out after 3 runs")
    assert outcome == mutate.SURVIVED


def test_the_same_verdicts_survive(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _deeper("ok", "ok", monkeypatch) == (mutate.SURVIVED, "")
