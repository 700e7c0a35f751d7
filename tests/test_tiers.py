"""The slow-tier table in conftest.py names only modules and tests that exist: a typo
would silently leave a slow test in the quick tier."""

from pathlib import Path

from conftest import SLOW_MODULES, SLOW_TESTS

TESTS = Path(__file__).parent


def test_every_slow_module_exists():
    assert [m for m in SLOW_MODULES if not (TESTS / m).is_file()] == []


def test_every_slow_test_is_defined_in_its_module():
    missing = []
    for entry in SLOW_TESTS:
        module, name = entry.split("::")
        text = (TESTS / module).read_text() if (TESTS / module).is_file() else ""
        if f"def {name}(" not in text:
            missing.append(entry)
    assert missing == []
