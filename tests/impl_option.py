"""`pytest --impl MODULE`: run every lesson against your own variant, expected `ok`.

With `--impl`, the session collects only `tests/test_impl.py` (one test per lesson,
against MODULE) and skips collecting the rest of the suite, whose tests are about the
shipped variants. Without it, the same tests run against `reference.hardened` (ok on every lesson), which keeps the
path exercised. A module that cannot be imported stops the session with one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.variants import Variant, VariantError, load_impl

DEFAULT = "reference.hardened"
IMPL_TESTS = "test_impl.py"


def add_impl_option(parser: pytest.Parser) -> None:
    """Called from conftest's `pytest_addoption` (one per conftest, so it chains)."""
    parser.addoption(
        "--impl",
        metavar="MODULE",
        default=None,
        help="run every lesson against this variant module (dotted name or path), expected ok",
    )


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--impl") or DEFAULT
    try:
        config.stash[_VARIANT] = load_impl(name)
    except VariantError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("--impl")
    return f"--impl {name}: running only the lesson checks (tests/{IMPL_TESTS})" if name else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `--impl`, every test module but ours is left uncollected (None: no opinion)."""
    if not config.getoption("--impl") or collection_path.is_dir():
        return None
    name = collection_path.name
    if name.startswith("test_") and name != IMPL_TESTS:
        return True
    return None


@pytest.fixture
def impl_variant(request: pytest.FixtureRequest) -> Variant:
    return request.config.stash[_VARIANT]


_VARIANT = pytest.StashKey[Variant]()
