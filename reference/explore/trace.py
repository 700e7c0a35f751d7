"""Schedules as text, and the two-lane trace of a counterexample.

A DPOR schedule is the thread index run at each scheduling step. We print it
run-length encoded (`1x16,0x163,1x2,0x8`: thread 1 for 16 steps, then thread 0 for
163, ...), which `--replay` reads back.

The trace comes from replaying the schedule with frontrun's trace recorder. It keeps
the shared-state accesses made in the variant's code and in the lesson's worker bodies
(the exploration machinery is left out), merges each thread's consecutive accesses on
one source line, and lays them out in one column per thread, in the order they
happened: where each thread was switched out (`||`, before that line completed; a
resumed thread finishes it first) and resumed, and every mutation of a type of object
both threads touch (`*`; the recorder names types, not objects, so read a `*` as "maybe
the same object"). Other accesses are left out; one line under the trace says how many.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
# The exploration machinery; the per-lesson worker bodies stay in the trace.
HARNESS = frozenset(os.path.join(_HERE, name) for name in ("property.py", "runner.py", "trace.py"))
LANE_WIDTH = 58  # two lanes and their gap fit a 120-column terminal and notebook output
CONTAINERS = frozenset({"dict", "defaultdict", "set", "list", "deque", "OrderedDict"})
# Method loads that mutate their object: the trace records them as reads of the method.
MUTATORS = frozenset({"add", "append", "clear", "discard", "extend", "insert", "pop", "popitem", "remove",
                      "setdefault", "update"})  # fmt: skip
_RUN = re.compile(r"^(\d+)x(\d+)$")


class ScheduleError(ValueError):
    """A schedule string that cannot be read; the message is one line."""


def encode(schedule: Sequence[int]) -> str:
    runs: list[list[int]] = []
    for thread in schedule:
        if runs and runs[-1][0] == thread:
            runs[-1][1] += 1
        else:
            runs.append([thread, 1])
    return ",".join(f"{thread}x{count}" for thread, count in runs)


def decode(text: str, threads: int) -> list[int]:
    schedule: list[int] = []
    for part in text.replace(" ", "").split(","):
        match = _RUN.match(part)
        if not match:
            raise ScheduleError(f"bad schedule step {part!r}: expected THREADxCOUNT, e.g. 1x16,0x163")
        thread, count = int(match[1]), int(match[2])
        if thread >= threads or count == 0:
            raise ScheduleError(f"bad schedule step {part!r}: {threads} threads, counts from 1")
        schedule += [thread] * count
    return schedule


def _shared_lines(events: list[Any]) -> list[Any]:
    from frontrun._trace_format import deduplicate_to_source_lines

    shared = [e for e in events if e.access_type and e.filename not in HARNESS]
    return deduplicate_to_source_lines(shared)


def _key(line: Any) -> tuple[str | None, str | None]:
    return (line.obj_type_name, line.attr_name)


def _mutates(line: Any) -> bool:
    container = line.obj_type_name in CONTAINERS
    return "write" in (line.access_type or "") or (container and line.attr_name in MUTATORS)


def _cell(line: Any, conflict: bool, paused: bool) -> str:
    where = f"{os.path.basename(line.filename)}:{line.lineno}"
    access = f"[{'write' if _mutates(line) else 'read'} {line.obj_type_name or ''}.{line.attr_name or ''}]"
    mark = "||" if paused else ("* " if conflict else "  ")
    text = f"{mark}{where} {line.source_line}"
    room = LANE_WIDTH - len(access) - 1
    if len(text) > room:
        text = text[: room - 3] + "..."
    return f"{text:<{room}} {access}"


def two_lanes(events: list[Any], lanes: Sequence[str]) -> str:
    """The accesses of one replayed interleaving, one column per thread, in order.

    Kept: where each thread starts and stops running (`||`: switched out before this
    line completed), and every mutation of an object type both threads touch (`*`).
    """
    lines = _shared_lines(events)
    if not lines:
        return "(no shared-state accesses recorded in the variant's code)"
    threads_of: dict[str | None, set[int]] = {}
    for line in lines:
        threads_of.setdefault(line.obj_type_name, set()).add(line.thread_id)
    conflicts = {
        i for i, line in enumerate(lines) if _mutates(line) and len(threads_of[line.obj_type_name]) > 1
    }
    keep = conflicts | _boundaries(lines)
    header = "  ".join(f"{name:<{LANE_WIDTH}}" for name in lanes).rstrip()
    rows = [header, "  ".join("-" * LANE_WIDTH for _ in lanes)]
    for index, line in enumerate(lines):
        if index in keep:
            paused = index + 1 < len(lines) and lines[index + 1].thread_id != line.thread_id
            rows.append(_row(line.thread_id, _cell(line, index in conflicts, paused), len(lanes)))
    if len(lines) > len(keep):
        left_out = len(lines) - len(keep)
        rows.append(f"({left_out} other accesses, neither at a switch nor a shared mutation, left out)")
    return "\n".join(row.rstrip() for row in rows)


def _boundaries(lines: list[Any]) -> set[int]:
    """The first and last access of each run of one thread."""
    keep = set()
    for i, line in enumerate(lines):
        first = i == 0 or lines[i - 1].thread_id != line.thread_id
        last = i == len(lines) - 1 or lines[i + 1].thread_id != line.thread_id
        if first or last:
            keep.add(i)
    return keep


def _row(thread: int, cell: str, lanes: int) -> str:
    cells = [" " * LANE_WIDTH] * lanes
    if thread < lanes:
        cells[thread] = f"{cell:<{LANE_WIDTH}}"
    return "  ".join(cells)
