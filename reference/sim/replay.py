"""`python -m reference --replay FILE`: run a saved counterexample again.

The file (`report.save`) names the lesson, the variant (its module name and path, or the
upstream wheel or tree), the invariant and the plan. The plan alone decides the run, so
the replay is the same run on any machine: it prints the timeline and exits 1 when the
invariant breaks again, 0 when it holds (the variant was fixed since), 2 when the file or
the variant cannot be loaded.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from reference.sim.invariants import checked_by
from reference.sim.plan import Plan
from reference.sim.profiles import PROFILES
from reference.sim.report import timeline
from reference.sim.run import run_plan
from reference.variants import VariantError, load_impl

PROG = "python -m reference --replay"


Resolve = Callable[[dict[str, str]], "ModuleType | None"]


def replay_file(path: str, variant: ModuleType | None = None, resolve: Resolve | None = None) -> int:
    """Replay the counterexample in `path` (against `variant`, default: the one it names).
    `resolve` loads a variant this module cannot (the CLI's: an upstream release's wheel)."""
    try:
        data = json.loads(Path(path).read_text())
        plan = Plan.from_json(data["plan"])
        module = variant or (resolve and resolve(data["variant"])) or _load(data["variant"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return _error(f"{path}: not a simulation counterexample ({type(exc).__name__}: {exc})")
    except VariantError as exc:
        return _error(str(exc))
    run = run_plan(module, plan, checked_by(str(data["lesson"])) if data.get("lesson") in PROFILES else None)
    name = getattr(module, "__name__", "?")
    if run.violation is None:
        print(f"{data['lesson']}: {name}: the saved run no longer breaks {data['invariant']}: "
              f"all {len(plan.steps)} steps hold")  # fmt: skip
        return 0
    print(f"{data['lesson']}: {name}: bug, replayed from {path}")
    print(timeline(run))
    return 1


def _load(spec: dict[str, str]) -> ModuleType:
    if "sglang" in spec:
        raise VariantError(f"the counterexample is upstream's ({spec['sglang']}): replay it with {PROG}")
    name, path = spec.get("module", ""), spec.get("path", "")
    try:
        module = importlib.import_module(name)
        if not path or str(Path(getattr(module, "__file__", "") or "").resolve()).startswith(path):
            return module
    except ImportError:
        pass
    return load_impl(path or name).module


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
