"""`--sglang` needs the `upstream` extra (numpy, msgspec; pyzmq and aiohttp are base
dependencies): without one of them the run stops with one line naming the extra,
never a `NameError` inside a verdict (`reference/upstream/deps.py`).

A package is made absent the way a failed import is: `sys.modules[name] = None`, in a
child process (the adapter is loaded fresh there, nothing is cached)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from upstream_wheels import ROOT, wheel

HIDE = """
import sys
sys.modules[{name!r}] = None
{patch}
from reference.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _run(name: str, *args: str, patch: str = "") -> subprocess.CompletedProcess[str]:
    code = HIDE.format(name=name, patch=patch)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})  # fmt: skip


def test_the_extra_declares_what_the_loader_needs() -> None:
    from reference.upstream.deps import REQUIRED

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = " ".join(project["optional-dependencies"]["upstream"] + project["dependencies"])
    for dist in REQUIRED.values():
        assert dist in declared, f"{dist} is in no install the README names"


@pytest.mark.parametrize("name", ["numpy", "msgspec"])
def test_a_missing_dependency_is_one_line_naming_the_extra(name: str) -> None:
    done = _run(name, "--sglang", str(wheel("0.5.19")))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert name in lines[0] and ".[upstream]" in lines[0], lines[0]


def test_the_loader_refuses_a_stand_in_for_a_required_import() -> None:
    # Past the up-front check: the loader itself stops at the file that imports numpy.
    patch = "import reference.upstream.deps as d; d.require = lambda *a, **k: None"
    done = _run("numpy", "--sglang", str(wheel("0.5.19")), patch=patch)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert (
        "imports numpy" in lines[0] and ".[upstream]" in lines[0] and "sglang/srt/disaggregation/" in lines[0]
    )
    assert "NameError" not in done.stderr + done.stdout
