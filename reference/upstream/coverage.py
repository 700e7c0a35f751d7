"""What decided a verdict on upstream, measured from the run: line coverage.

`decided(lesson, variant, options)` runs the lesson with a line tracer on every thread
(`sys.settrace` and `threading.settrace`, as `tests/test_upstream_traced.py` does) and
records each line executed in two kinds of file: upstream's (a code object of the
loaded release, `<sglang-0.5.19>/sglang/...`) and the adapter's
(`reference/upstream/*.py`). From that:

- `deciding`: the line of the method the lesson turns on (`decides.py`: the method a
  fix changed, or the one that leaves a residual hole open) and `deciding_ran`, whether
  that very line executed in this run;
- `upstream`: per upstream file, the lines that executed; `adapter`: the same for the
  adapter's files, and `stand_ins`: which of the adapter's stand-ins for upstream
  behaviour ran (`STAND_INS`, each with what it replaces);
- `adapter_decided`: the verdict did not come from upstream's code. Literally: the
  deciding line did not execute, or a stand-in for upstream behaviour ran in a run
  whose verdict is `bug` (a symptom that stand-in may have made). The table and JSON
  carry the label (`label()`); `tests/test_upstream_decided.py` keeps it at zero on the
  four fix lessons for every release it has a wheel of.

A `latent` verdict is read from upstream's own wiring (`wiring.py`: the file and line
that says nothing triggers the defect), so the run's deciding line is that of the
trigger run; an `unknown` one decides nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from reference.harness.lesson import Lesson, Options, run_lesson
from reference.harness.result import Result
from reference.upstream.decides import deciding_line

ADAPTER_DIR = str(Path(__file__).resolve().parent)
# Adapter functions that do what upstream's code would (not loading, wiring or clocking):
# (file, function) -> the upstream behaviour it replaces.
STAND_INS: dict[tuple[str, str], str] = {
    ("manager.py", "_discard_without_the_lock"): "mori's room-tracking cleanup, gone from 0.5.20 "
    "(lesson live-set-race's trigger on those releases)",
}


@dataclass
class Decision:
    deciding: str  # `file:line Class.method: what` (decides.py)
    deciding_ran: bool
    upstream: dict[str, set[int]] = field(default_factory=dict)  # wheel file -> lines executed
    adapter: dict[str, set[int]] = field(default_factory=dict)  # reference/upstream file -> lines
    stand_ins: list[str] = field(default_factory=list)  # "manager.py:_discard_without_the_lock: what"
    adapter_decided: bool = False

    def summary(self) -> str:
        lines = sum(len(v) for v in self.upstream.values())
        ran = "ran" if self.deciding_ran else "did not run"
        text = f"{self.deciding} ({ran}; {lines} upstream lines in {len(self.upstream)} files)"
        if self.stand_ins:
            text += "; adapter stand-ins that ran: " + ", ".join(self.stand_ins)
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "deciding": self.deciding,
            "deciding_ran": self.deciding_ran,
            "upstream_lines": {f: len(v) for f, v in sorted(self.upstream.items())},
            "adapter_lines": {f: len(v) for f, v in sorted(self.adapter.items())},
            "stand_ins": self.stand_ins,
            "adapter_decided": self.adapter_decided,
        }


def label(result: Result, decision: Decision | None) -> str:
    """The verdict as the table and JSON show it: `adapter-decided` where it was."""
    return "adapter-decided" if decision is not None and decision.adapter_decided else result.verdict


class _Tracer:
    def __init__(self) -> None:
        self.upstream: dict[str, set[int]] = {}
        self.adapter: dict[str, set[int]] = {}
        self.functions: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        filename = frame.f_code.co_filename
        if filename.startswith("<sglang-"):
            table = self.upstream
            key = filename.partition(">/")[2]
        elif filename.startswith(ADAPTER_DIR):
            table, key = self.adapter, Path(filename).name
            with self.lock:
                self.functions.add((key, frame.f_code.co_name))
        else:
            return None
        lines = table.setdefault(key, set())

        def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        lines.add(frame.f_lineno)
        return local


def decided(lesson: Lesson, variant: Any, options: Options) -> tuple[Result, Decision]:
    """Run `lesson` on the upstream `variant` under the tracer; the result and what decided it."""
    tracer = _Tracer()
    previous = sys.gettrace()
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        result = run_lesson(lesson, variant, options)
    finally:
        sys.settrace(previous)
        threading.settrace(None)  # type: ignore[arg-type]
    return result, _decision(variant.module, lesson.id, result, tracer)


def _decision(module: ModuleType, lesson_id: str, result: Result, tracer: _Tracer) -> Decision:
    deciding = deciding_line(module, lesson_id)
    where = deciding.split(" ", 1)[0]
    file, _, line = where.rpartition(":")
    ran = line.isdigit() and int(line) in tracer.upstream.get(file, set())
    stand_ins = [
        f"{f}:{name}: {what}" for (f, name), what in STAND_INS.items() if (f, name) in tracer.functions
    ]
    decision = Decision(deciding, ran, tracer.upstream, tracer.adapter, stand_ins)
    if result.verdict in ("bug", "ok", "latent"):
        decision.adapter_decided = not ran or (result.verdict == "bug" and bool(stand_ins))
    return decision
