"""Where the tests find sglang wheels: `$SGLANG_WHEELS`, else `.cache/sglang/` (what
`bash ci/upstream.sh` downloads). A test that needs an absent wheel skips, saying how
to fetch it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The boundary releases CI checks (before/after each fix) and the newest on PyPI.
NEWEST = "0.5.23"
VERSIONS = ("0.5.11", "0.5.12", "0.5.18", "0.5.19", NEWEST)


def wheel_dir() -> Path:
    return Path(os.environ.get("SGLANG_WHEELS", ROOT / ".cache" / "sglang"))


def wheel(version: str) -> Path:
    found = sorted(wheel_dir().glob(f"sglang-{version}-*.whl"))
    if not found:
        message = f"no sglang-{version} wheel in {wheel_dir()} (fetch with: bash ci/upstream.sh --fetch-only)"
        if os.environ.get("SGLANG_WHEELS_REQUIRED"):  # ci/upstream.sh: a skip would hide a gap
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found[0]
