"""`pytest --impl MODULE`: run every check of every lesson against your own variant.

Loaded by `-p reference.harness.pytest_plugin` in pyproject.toml's `addopts`, before
pytest reads its arguments, so that `--impl PATH` (with a space) takes the path as the
option's value rather than as a test path.

With `--impl`, the session collects only `tests/test_impl.py` (one test per check of
each lesson, against MODULE) and `tests/test_explore_impl.py` (one per explored
property) and skips collecting the rest of the suite, whose tests are about the shipped
variants. Without it, the same tests run against `reference.hardened` (ok everywhere),
which keeps the path exercised (the explorations: `reference.fixed`). The module is
imported, and each check run, in a worker process under the CLI's time bound
(`reference/harness/isolation.py`: 20 s per import and per lesson, `--impl-timeout S` to
change), so a module that hangs cannot hang pytest. A module that
cannot be imported (it raises, exits, hangs or is interrupted while importing) stops
the session with one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.harness.isolation import DEFAULT_TIMEOUT, MAX_TIMEOUT, IsolationError, check_loads
from reference.harness.specs import VariantSpec

DEFAULT = "reference.hardened"
EXPLORE_DEFAULT = "reference.fixed"
IMPL_TESTS = ("test_impl.py", "test_explore_impl.py")  # the lesson checks and the explorations


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pd-reference").addoption(
        "--impl",
        metavar="MODULE",
        default=None,
        help="run every lesson against this variant module (dotted name or path), expected ok",
    )
    parser.getgroup("pd-reference").addoption(
        "--impl-timeout",
        type=float,
        metavar="S",
        default=None,
        help=f"time bound per import and per lesson for --impl (default {DEFAULT_TIMEOUT:g} s, as the CLI)",
    )


def pytest_configure(config: pytest.Config) -> None:
    spec = VariantSpec("impl", config.getoption("--impl") or DEFAULT)
    timeout = config.getoption("--impl-timeout")
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:
        raise pytest.UsageError(f"--impl-timeout: expected seconds > 0 and <= {MAX_TIMEOUT:g}, got {timeout}")
    if config.getoption("--impl"):  # the default, reference.fixed, is known to load
        try:
            check_loads(spec, timeout)
        except IsolationError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[_VARIANT] = spec
    config.stash[_TIMEOUT] = timeout


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("--impl")
    return f"--impl {name}: running only {', '.join('tests/' + t for t in IMPL_TESTS)}" if name else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `--impl`, every test module but ours is left uncollected (None: no opinion)."""
    if not config.getoption("--impl") or collection_path.is_dir():
        return None
    name = collection_path.name
    if name.startswith("test_") and name not in IMPL_TESTS:
        return True
    return None


@pytest.fixture
def impl_variant(request: pytest.FixtureRequest) -> VariantSpec:
    """How to load the variant under test; `run_isolated` loads it in its worker."""
    return request.config.stash[_VARIANT]


@pytest.fixture
def explore_variant(request: pytest.FixtureRequest) -> VariantSpec:
    """The variant the explorations check: `--impl`, else `reference.fixed`, whose properties
    the upstream fixes claim (the hardened default of the lesson checks adds code paths, so
    interleavings, that the explorations' time bound was not sized for)."""
    if request.config.getoption("--impl"):
        return request.config.stash[_VARIANT]
    return VariantSpec("impl", EXPLORE_DEFAULT)


@pytest.fixture
def impl_timeout(request: pytest.FixtureRequest) -> float | None:
    """`--impl-timeout`, or None for the CLI's default bound."""
    return request.config.stash[_TIMEOUT]


_VARIANT = pytest.StashKey[VariantSpec]()
_TIMEOUT = pytest.StashKey[float | None]()
