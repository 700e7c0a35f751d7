"""Fixtures of the micro benchmarks (run by `python -m benchmarks`, not by `pytest`).

Every micro benchmark runs once per variant and labels itself with `label()`: the case
it measures, the variant (`buggy`, `fixed` or `hardened`) and how many operations one timed round
performs. `benchmarks/overhead.py` pairs the two variants of each case from the
pytest-benchmark JSON and turns round times into ns/op and fixed/buggy and hardened/buggy
ratios.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from benchmarks.modes import MODES, Mode

VARIANTS = ("buggy", "fixed", "hardened")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--bench-mode", default="full", choices=sorted(MODES), help="full or smoke sizes")


@pytest.fixture(scope="session")
def mode(request: pytest.FixtureRequest) -> Mode:
    return MODES[request.config.getoption("--bench-mode")]


@pytest.fixture(params=VARIANTS)
def variant(request: pytest.FixtureRequest) -> tuple[str, ModuleType]:
    """(name, module) of each shipped variant; buggy, fixed and hardened run back to back."""
    return request.param, importlib.import_module(f"reference.{request.param}")


def label(benchmark: Any, case: str, variant: str, ops_per_round: int, **extra: Any) -> None:
    """Tag a benchmark so that the report can pair buggy and fixed of one case."""
    benchmark.group = case
    benchmark.extra_info.update(case=case, variant=variant, ops_per_round=ops_per_round, **extra)
