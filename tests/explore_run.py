"""Run `python -m reference --explore ... --json` in a child process and read its findings.

The child gets frontrun's environment from us, as `frontrun python ...` would set it up;
with `reexec=True` it starts without it and the CLI re-executes itself under frontrun.
Each exploration is bounded (30 s) by the explorer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOUND = 55.0  # seconds for one child (pytest-timeout is 60)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def findings(self) -> list[dict]:
        return json.loads(self.stdout)["explorations"]


def run_cli(*args: str, env: dict[str, str] | None = None, reexec: bool = False, bound: float = BOUND) -> Run:
    base = {k: v for k, v in os.environ.items() if k not in ("FRONTRUN_ACTIVE", "LD_PRELOAD")}
    if not reexec:
        from frontrun import cli as frontrun_cli

        base = frontrun_cli._build_env(frontrun_cli._find_preload_library())
    paths = [REPO, *filter(None, base.get("PYTHONPATH", "").split(os.pathsep))]
    base["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    base.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "reference", "--explore", *args],
        capture_output=True, text=True, timeout=bound, env=base, check=False,
    )  # fmt: skip
    return Run(done.returncode, done.stdout, done.stderr)


def explore_json(*args: str) -> list[dict]:
    run = run_cli(*args, "--json")
    assert run.stdout.strip(), f"no output (exit {run.returncode}): {run.stderr.strip()[-500:]}"
    return run.findings()
