"""The interleaving explorer's verdict, from a notebook cell.

`python -m reference --explore` (reference/explore/) runs a race's threads under
frontrun's DPOR, which needs its own process environment (a preload library). A notebook
kernel does not have it, so `explore` runs that command in a child process given
frontrun's environment (`--json`, bounded: one that overruns is killed and said so) and
prints what it found: per variant the verdict and symptom (for `ok`, "holds over all N
interleavings"), then each counterexample's replay command and two-lane trace.
Wall-clock times are left out. The number behind an `ok` is the one this run measured,
with how it was bounded ("all 50 interleavings (exhaustive)", or "14 interleavings
(preemption bound 1)"): DPOR's count is the same on a quiet machine but can grow under load
(50 here, 95 once with four explorations at once; the verdict does not change), so the
sentence is true of the run that printed it, and a committed notebook shows its render's
run. Without frontrun installed it prints the command's one-line error instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import reference

CHECKOUT = Path(reference.__file__).resolve().parents[1]
BOUND = 90.0  # real seconds for the child: its own bound is 30 s per exploration


@dataclass(frozen=True)
class Exploration:
    heading: str
    findings: tuple[dict, ...]
    error: str = ""
    traces: bool = True

    def __repr__(self) -> str:
        if self.error:
            return f"{self.heading}\n  {self.error}"
        lines = [self.heading]
        for f in self.findings:
            lines.append(f"  {f['variant']:>8}: {f['verdict'].upper():<7} {f['symptom']}")
        for f in self.findings:
            if f["verdict"] == "bug" and self.traces:
                replay = (
                    f"python -m reference --explore --lesson {f['lesson']} --property {f['property']} "
                    f"{_flag(f['variant'])} --replay {f['schedule']}"
                )
                lines += ["", f"{f['variant']}'s counterexample (replay it: {replay}):", "", f["trace"] or ""]
        return "\n".join(lines)


def _flag(variant: str) -> str:
    return f"--variant {variant}" if variant in ("buggy", "fixed", "hardened") else f"--impl {variant}"


def _claim(lesson: str, prop: str) -> str:
    from reference.explore import PROPERTIES

    found = [p.claim for p in PROPERTIES.get(lesson, ()) if p.id == prop]
    if not found:
        raise ValueError(f"no exploration {prop!r} for lesson {lesson!r}")
    return found[0]


def _frontrun_env() -> dict[str, str]:
    """This environment plus frontrun's (as `frontrun python ...` sets it up), so the child is
    the explorer itself and a timeout here stops it; without frontrun, the command says why."""
    try:
        from frontrun import cli as frontrun_cli
    except ImportError:
        return dict(os.environ)
    return dict(frontrun_cli._build_env(frontrun_cli._find_preload_library()))


def explore(
    lesson: str,
    prop: str,
    variants: Sequence[str] = ("buggy", "fixed"),
    impls: Sequence[str] = (),
    traces: bool = True,
) -> Exploration:
    """Explore `prop` of `lesson` against shipped `variants` and `--impl` modules, in a child."""
    heading = f"{lesson}/{prop}: {_claim(lesson, prop)}"
    args = ["--explore", "--lesson", lesson, "--property", prop, "--json"]
    args += [a for v in variants for a in ("--variant", v)] + [a for m in impls for a in ("--impl", m)]
    env = _frontrun_env()
    paths = [str(CHECKOUT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "reference", *args],
            capture_output=True, text=True, timeout=BOUND, env=env, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Exploration(heading, (), error=f"the explorer did not finish within {BOUND:g} s")
    try:
        findings = tuple(json.loads(done.stdout)["explorations"])
    except (json.JSONDecodeError, KeyError):
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}, no output"])[-1]
        return Exploration(heading, (), error=last)
    return Exploration(heading, findings, traces=traces)
