"""A counterexample people can use: a numbered timeline, the invariant, a replay file.

`timeline(run)` prints the shrunk run as numbered events, one lane per component
(each decode manager, each prefill, the decode-status thread, the scheduler, the clock),
the step that broke the invariant marked; `save(...)` writes the plan and what it broke
as JSON, which `python -m reference --replay FILE` runs again (`replay.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from reference.sim.run import Run

WIDTH = 118  # every line fits a 120-column terminal
LANE = 15


def timeline(run: Run) -> str:
    violation = run.violation
    assert violation is not None
    spec = violation.spec
    plan = run.plan
    head = [
        f"invariant {spec.id} ({spec.lesson if spec.lesson != '*' else 'every lesson'}): {spec.claim}",
        f"  source: {spec.source}",
        f"  run: {plan.managers} decode manager(s), prefills (tp, cp) {plan.prefills}, "
        f"sockets {plan.sockets}, faults on: {', '.join(plan.faults) or 'none'}",
        f"  steps: {plan.steps}",
        "   #   t (s)  lane           event",
    ]
    rows = [f"{n:>4} {t:>7.1f}  {lane:<{LANE}}{text}" for n, (t, lane, text) in enumerate(run.log, 1)]
    broke = f"   !  {'':>6}  {'broke':<{LANE}}{violation.detail}"
    return "\n".join(_fit(line) for line in [*head, *rows, broke])


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def save(run: Run, lesson: str, variant: ModuleType, directory: str | None = None) -> Path:
    """Write the counterexample; the name is a digest of its content (same run, same file)."""
    violation = run.violation
    assert violation is not None
    data: dict[str, Any] = {
        "lesson": lesson,
        "variant": _variant_spec(variant),
        "invariant": violation.invariant,
        "detail": violation.detail,
        "plan": run.plan.to_json(),
    }
    text = json.dumps(data, indent=1, sort_keys=True)
    folder = Path(
        directory or os.environ.get("REFERENCE_SIM_DIR") or Path(tempfile.gettempdir()) / "pd-reference-sim"
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lesson}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    path.write_text(text + "\n")
    return path


def _variant_spec(variant: ModuleType) -> dict[str, str]:
    """How `replay` finds the variant again: a module (name and path), or an upstream
    release's wheel or tree (the upstream adapter's `SOURCE`)."""
    source = getattr(variant, "SOURCE", None)
    if source is not None:
        return {"sglang": str(Path(source.origin).resolve())}
    return {"module": variant.__name__, "path": _module_path(variant)}


def _module_path(module: ModuleType) -> str:
    file = getattr(module, "__file__", None) or ""
    if file.endswith("__init__.py"):
        return str(Path(file).parent.resolve())
    return str(Path(file).resolve()) if file else ""
