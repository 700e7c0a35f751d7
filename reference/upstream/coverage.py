"""What decided a verdict on upstream, measured from the run: line coverage.

Every check a lesson runs on an upstream variant goes through the variant's `DECIDE`
(`traced_decide`): the check runs with a line tracer on every thread (`sys.settrace`
and `threading.settrace`, chained after any tracer already there, such as
`tests/test_upstream_traced.py`'s) that records each line executed in two kinds of
file: upstream's (a code object of the loaded release, `<sglang-0.5.19>/sglang/...`)
and the adapter's (`reference/upstream/*.py`). The check's `Decision` goes into its
details (`decided_by`); `lesson_decision(result)` joins a lesson's checks, and
`decided(lesson, variant, options)` runs a lesson and returns both. From that:

- `deciding`: the line of the method the lesson turns on (`decides.py`: the method a
  fix changed, or the one that leaves a residual hole open) and `deciding_ran`, whether
  that very line executed in this run;
- `upstream`: per upstream file, the lines that executed, and `functions`, each upstream
  function that ran; where a lesson's checks judge named upstream methods (`JUDGED`:
  task-refs' loops), each check's symptom names those that ran in it, with their lines;
  `adapter`: the same for the
  adapter's files, and `stand_ins`: which of the adapter's stand-ins for upstream
  behaviour ran (`STAND_INS`, each with what it replaces);
- `adapter_decided`: the verdict did not come from upstream's code. Literally: the
  deciding line did not execute, or a stand-in for upstream behaviour ran in a run
  whose verdict is `bug` (a symptom that stand-in may have made); for a lesson, a
  stand-in counts in the checks that saw `bug`. `python -m reference --sglang`'s table
  and `--json`, and the version matrix, carry the label (`label()`, `json_fields()`);
  `tests/test_upstream_decided.py` keeps it at zero on the four fix lessons for every
  release it has a wheel of.

A `latent` verdict is read from upstream's own wiring (`wiring.py`: the file and line
that says nothing triggers the defect), so the run's deciding line is that of the
trigger run; an `unknown` one decides nothing.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from reference.harness.lesson import Lesson, Options, run_lesson
from reference.harness.result import Observation, Result
from reference.upstream.decides import SHAPES, deciding_line

ADAPTER_DIR = str(Path(__file__).resolve().parent)
PACKAGE = "sglang/srt/disaggregation/"
# lesson -> the upstream methods its checks judge: each check's symptom names those that ran.
JUDGED: dict[str, tuple[str, ...]] = {
    "task-refs": ("start", "_result_listener", "_worker_watchdog", "_cleanup_stale_mappings",
                  "_run_server", "_cleanup_expired_entries"),
}  # fmt: skip
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
    functions: list[str] = field(default_factory=list)  # upstream functions that ran: "Class.f (file:line)"

    def summary(self) -> str:
        lines = sum(len(v) for v in self.upstream.values())
        ran = "ran" if self.deciding_ran else "did not run"
        deciding = self.deciding or "no deciding line named (decides.py)"
        text = f"{deciding} ({ran}; {lines} upstream lines in {len(self.upstream)} files)"
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
            "upstream_functions": self.functions,
        }


def label(result: Result, decision: Decision | None = None) -> str:
    """The verdict as the table and JSON show it: `adapter-decided` where it was
    (`decision` defaults to the one the run recorded, `lesson_decision`)."""
    decision = lesson_decision(result) if decision is None else decision
    return "adapter-decided" if decision is not None and decision.adapter_decided else result.verdict


def json_fields(result: Result) -> dict[str, Any]:
    """What `--json` adds to an upstream result: its label and what decided it ({} otherwise)."""
    decision = lesson_decision(result)
    return {} if decision is None else {"label": label(result, decision), "decided_by": decision.to_json()}


Trace = Callable[[FrameType, str, Any], Any]


class _Tracer:
    def __init__(self) -> None:
        self.upstream: dict[str, set[int]] = {}
        self.adapter: dict[str, set[int]] = {}
        self.functions: set[tuple[str, str]] = set()
        self.upstream_functions: set[tuple[str, int, str]] = set()  # (file, first line, qualname)
        self.lock = threading.Lock()
        self.stopped = False  # a thread the check left running records nothing after it

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Trace | None:
        filename = frame.f_code.co_filename
        if self.stopped:
            return None
        if filename.startswith("<sglang-"):
            table = self.upstream
            key = filename.partition(">/")[2]
            code = frame.f_code
            with self.lock:
                self.upstream_functions.add((key, code.co_firstlineno, code.co_qualname))
        elif filename.startswith(ADAPTER_DIR):
            table, key = self.adapter, Path(filename).name
            with self.lock:
                self.functions.add((key, frame.f_code.co_name))
        else:
            return None
        with self.lock:
            lines = table.setdefault(key, set())

        def local(frame: FrameType, event: str, arg: Any) -> Trace | None:
            if event == "line" and not self.stopped:
                lines.add(frame.f_lineno)
            return local

        lines.add(frame.f_lineno)
        return local

    def snapshot(self) -> tuple[dict[str, set[int]], dict[str, set[int]], set[tuple[str, str]]]:
        self.stopped = True
        with self.lock:
            return (
                {k: set(v) for k, v in self.upstream.items()},
                {k: set(v) for k, v in self.adapter.items()},
                set(self.functions),
            )

    def ran_upstream(self) -> list[str]:
        """Each upstream function that ran, `Class.method (file:line)`, in file order."""
        with self.lock:
            found = sorted(self.upstream_functions)
        return [f"{name} ({file.removeprefix(PACKAGE)}:{line})" for file, line, name in found]


def _chain(first: Trace | None, second: Trace | None) -> Trace | None:
    """One trace function that calls `first` then `second` (each keeps its own local one)."""
    if first is None or second is None:
        return first or second

    def both(frame: FrameType, event: str, arg: Any) -> Trace | None:
        return _chain(first(frame, event, arg), second(frame, event, arg))

    return both


@contextlib.contextmanager
def _tracing(tracer: _Tracer) -> Iterator[None]:
    """`tracer` on this thread and every thread started meanwhile, after any tracer there."""
    previous, previous_threads = sys.gettrace(), threading.gettrace()
    threading.settrace(_chain(previous_threads, tracer))  # type: ignore[arg-type]
    sys.settrace(_chain(previous, tracer))  # type: ignore[arg-type]
    try:
        yield
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)  # type: ignore[arg-type]


def traced_decide(module: ModuleType, decide: Callable[..., Observation], lesson_id: str, options: Options,
                  run: Callable[[Options], Observation]) -> Observation:  # fmt: skip
    """The variant's `DECIDE`: `decide` (upstream's wiring, `wiring.decide`) under the tracer;
    the check's `Decision` in its details, under `decided_by`."""
    tracer = _Tracer()
    with _tracing(tracer):
        observation = decide(lesson_id, options, run)
    decision = _decision(module, lesson_id, observation.verdict, tracer)
    details = {**observation.details, "decided_by": decision}
    return Observation(
        observation.verdict, _judged(lesson_id, observation, decision), observation.timeline, details
    )


def _judged(lesson_id: str, observation: Observation, decision: Decision) -> str:
    """The check's symptom, naming the upstream code it judged that ran in it (`JUDGED`)."""
    names = JUDGED.get(lesson_id, ())
    judged = [f for f in decision.functions if f.split(" ", 1)[0].rpartition(".")[2] in names]
    if not judged or observation.verdict == "unknown":
        return observation.symptom
    return f"{observation.symptom} [upstream code judged, run in this check: {', '.join(judged)}]"


def decided(lesson: Lesson, variant: Any, options: Options) -> tuple[Result, Decision]:
    """Run `lesson` on the upstream `variant`; the result and what decided it."""
    result = run_lesson(lesson, variant, options)
    decision = lesson_decision(result)
    if decision is None:  # no check reached upstream's code (a component it lacks)
        decision = Decision(_deciding(variant.module, lesson.id), False)
    return result, decision


def _decision(module: ModuleType, lesson_id: str, verdict: str, tracer: _Tracer) -> Decision:
    upstream, adapter, functions = tracer.snapshot()
    stand_ins = [f"{f}:{name}: {what}" for (f, name), what in STAND_INS.items() if (f, name) in functions]
    decision = Decision(_deciding(module, lesson_id), False, upstream, adapter, stand_ins)
    decision.functions = tracer.ran_upstream()
    decision.deciding_ran = _ran(decision)
    decision.adapter_decided = _adapter_decided(decision, verdict, bool(stand_ins))
    return decision


def _deciding(module: ModuleType, lesson_id: str) -> str:
    """The lesson's deciding line, or "" for a lesson `decides.py` names none for (the
    netns-found residual lessons: late-kv-write, bootstrap-partition)."""
    return deciding_line(module, lesson_id) if lesson_id in SHAPES else ""


def _ran(decision: Decision) -> bool:
    file, _, line = decision.deciding.split(" ", 1)[0].rpartition(":")
    return line.isdigit() and int(line) in decision.upstream.get(file, set())


def _adapter_decided(decision: Decision, verdict: str, stand_in_in_a_bug: bool) -> bool:
    if verdict not in ("bug", "ok", "latent"):
        return False  # an `unknown` decides nothing
    not_run = bool(decision.deciding) and not decision.deciding_ran  # no line named: only stand-ins count
    return not_run or (verdict == "bug" and stand_in_in_a_bug)


def lesson_decision(result: Result) -> Decision | None:
    """The lesson's checks' decisions joined (None: no check of it ran on upstream's code):
    the lines that ran in any; a stand-in counts where its check saw `bug`."""
    found = [(check.verdict, check.details.get("decided_by")) for check in result.checks]  # the story too
    decisions = [(verdict, d) for verdict, d in found if isinstance(d, Decision)]
    if not decisions:
        return None
    joined = Decision(decisions[0][1].deciding, False)
    for _, d in decisions:
        for mine, theirs in ((joined.upstream, d.upstream), (joined.adapter, d.adapter)):
            for file, lines in theirs.items():
                mine.setdefault(file, set()).update(lines)
        joined.stand_ins += [s for s in d.stand_ins if s not in joined.stand_ins]
        joined.functions += [f for f in d.functions if f not in joined.functions]
    joined.deciding_ran = _ran(joined)
    in_a_bug = any(d.stand_ins for verdict, d in decisions if verdict == "bug")
    joined.adapter_decided = _adapter_decided(joined, result.verdict, in_a_bug)
    return joined
