"""Bounded, isolated lesson runs: whatever a variant does, the run ends.

`run_isolated(lessons, spec, options)` forks one worker per variant
(`reference/harness/worker.py`), which imports the variant and runs the lessons in
order, and watches it against a wall-clock budget per phase: the import, then each
lesson. A worker that overruns (a loop on the main thread, a blocked event loop, an
import that never returns) has its threads' stacks dumped (faulthandler), is killed
with its whole process group, and its lesson becomes `unknown: hit its time bound (S s)
in <phase>` naming where it was stuck; the lessons after it run in a fresh worker. A
worker that exits mid-lesson makes that lesson `unknown`. A variant that cannot be
imported (it raises, exits the process, hangs or is interrupted while importing) is a
one-line `IsolationError`, as is any KeyboardInterrupt (`Interrupted`, exit 130).

Forking from the already-imported parent keeps the overhead to a few milliseconds per
variant. `run_lesson` (in-process, unbounded) stays the library API.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference.harness import worker
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Result
from reference.harness.specs import VariantSpec
from reference.harness.stacks import stuck_at
from reference.transport.kits import kit
from reference.variants import SHIPPED

# Default time bounds, in seconds. A mock lesson takes ~0.05 s; a loopback one, with real
# processes and upstream's 1 s send timeouts, 2 to 10 s, and up to 19 s measured on this
# 2-core machine under a load average of 12.
DEFAULT_TIMEOUT = 20.0  # the import, and each lesson on an in-process transport (mock)
PROCESSES_TIMEOUT = 45.0  # each lesson on a transport with real processes (loopback)
PER_TRIAL = 0.05  # seconds added per --repeat trial to the default (a trial takes ~8 ms)
MAX_REPEAT = 10_000
MAX_TIMEOUT = 3600.0
DUMP_WAIT = 1.0  # seconds at most for the stack dump after the time bound


class IsolationError(Exception):
    """A variant could not be loaded, or the run was interrupted; one line for the user."""

    exit_status = 2


class Interrupted(IsolationError):
    exit_status = 130


@dataclass
class Watch:
    """What the parent learns while workers run: stress progress and notes."""

    show: Callable[[str], None] | None = None  # where to show progress lines (a terminal)
    last: tuple[str, str, int, int, int] | None = None  # lesson, variant, done, total, fired
    notes: list[str] = field(default_factory=list)

    def so_far(self) -> str:
        """The stress rate so far, for an interrupted run ("" when no trial finished)."""
        if self.last is None or self.last[2] == 0:
            return ""
        lesson, variant, done, total, fired = self.last
        rate = f"{fired}/{done} trials ({fired / done:.1%})"
        return f"{lesson} on {variant}: race fired in {rate} of {total} asked"


def budget(lesson: Lesson, options: Options, timeout: float | None) -> float:
    """The wall-clock seconds one lesson may take: `timeout`, or the default plus the trials,
    plus twice the deep checks' budget (a search that finds a bug may shrink as long again)."""
    deep = 2 * options.budget if options.deep else 0.0
    if timeout is not None:
        return timeout + deep
    trials = options.repeat if lesson.stress is not None else 0
    base = DEFAULT_TIMEOUT if kit(options.transport).in_process else PROCESSES_TIMEOUT
    return base + PER_TRIAL * trials + deep


def run_isolated(
    lessons: Sequence[Lesson],
    spec: VariantSpec,
    options: Options,
    timeout: float | None = None,
    watch: Watch | None = None,
) -> list[Result]:
    """One Result per lesson, in order; raises IsolationError (one line) as above."""
    watch = watch or Watch()
    _preload()
    results: list[Result] = []
    while len(results) < len(lessons):
        results += _Run(lessons[len(results) :], spec, options, timeout, watch).collect()
    return results


def check_loads(spec: VariantSpec, timeout: float | None = None) -> None:
    """Import the variant in a worker; raises IsolationError when that fails."""
    _preload()
    _Run([], spec, Options(), timeout, Watch()).collect()


def _preload() -> None:
    """Import the shipped variants here, once: every worker inherits them, so a worker's
    import phase is only the user's own module (which often builds on them)."""
    for module, _ in SHIPPED.values():
        importlib.import_module(module)


class _Run:
    """One worker, from fork to reaping, and the frames it sends."""

    def __init__(
        self,
        lessons: Sequence[Lesson],
        spec: VariantSpec,
        options: Options,
        timeout: float | None,
        watch: Watch,
    ) -> None:
        self.lessons, self.spec, self.options = lessons, spec, options
        self.timeout, self.watch = timeout, watch
        self.results: list[Result] = []
        self.phase, self.index, self.variant = "import", 0, spec.target
        self.expected: dict[str, Any] = {}
        self.started = time.monotonic()
        self.deadline = self.started + (timeout if timeout is not None else DEFAULT_TIMEOUT)
        self.stack_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stop
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the worker would write the parent's buffered output again
        read, write = os.pipe()
        gc.freeze()  # a gc.collect() in the worker then leaves the inherited heap unwritten
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read)
            worker.serve(spec, lessons, options, write, self.stack_file)
        gc.unfreeze()
        os.close(write)
        self.pipe, self.buffer, self.reaped = read, bytearray(), False
        with contextlib.suppress(OSError):  # it already made itself a group, or already exited
            os.setpgid(self.pid, self.pid)

    def collect(self) -> list[Result]:
        try:
            while True:
                frame = self._next_frame()
                if frame is None or self._handle(frame):
                    return self.results
        finally:
            self._stop()

    def _handle(self, frame: tuple[Any, ...]) -> bool:
        """Apply one frame (None: the worker ended); True when this worker is finished."""
        kind = frame[0]
        if kind == "loaded":
            self.variant, self.expected = frame[1], frame[2]
        elif kind == "phase" and frame[1] == "scenario":
            self.phase, self.index, self.started = "scenario", frame[2], time.monotonic()
            self.deadline = self.started + budget(self.lessons[self.index], self.options, self.timeout)
        elif kind == "progress":
            self.phase = "stress"
            lesson_id, (done, total, fired) = self.lessons[self.index].id, frame[1:]
            self.watch.last = (lesson_id, self.variant, done, total, fired)
            if self.watch.show is not None:
                self.watch.show(f"{lesson_id} on {self.variant}: {done}/{total} trials, {fired} fired")
        elif kind == "result":
            self.results.append(frame[1])
        elif kind == "error":
            raise IsolationError(frame[1])
        elif kind == "interrupted":
            raise Interrupted(f"interrupted: {frame[1]}")
        elif kind == "done":
            if frame[1]:
                names = ", ".join(frame[1])
                self.watch.notes.append(f"{self.spec.label} left non-daemon thread(s) running: {names}")
            return True
        return False

    def _next_frame(self) -> tuple[Any, ...] | None:
        while (frame := worker.decode(self.buffer)) is None:
            left = self.deadline - time.monotonic()
            ready = select.select([self.pipe], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self._timed_out()
                return None
            data = os.read(self.pipe, 1 << 16)
            if not data:
                self._ended()
                return None
            self.buffer += data
        return frame

    def _bound(self) -> float:
        if self.phase == "import":
            return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT
        return budget(self.lessons[self.index], self.options, self.timeout)

    def _timed_out(self) -> None:
        stack = self._dump_stack()
        self._stop()
        where = stuck_at(stack)
        what = f"hit its time bound ({self._bound():g} s) in {self.phase}" + (f", {where}" if where else "")
        if self.phase == "import":
            raise IsolationError(f"{self.spec.label} {what}")
        self._unknown(what, {"stack": stack})

    def _ended(self) -> None:
        status = self._stop()
        how = f"killed by {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
        if self.phase == "import":
            raise IsolationError(f"{self.spec.label} exited the process during import ({how})")
        self._unknown(f"the variant ended the worker process in {self.phase} ({how})", {})

    def _unknown(self, symptom: str, details: dict[str, Any]) -> None:
        lesson = self.lessons[self.index]
        self.results.append(
            Result(
                lesson=lesson.id,
                variant=self.variant,
                transport=self.options.transport,
                backend="" if self.options.backend == "default" else self.options.backend,
                sockets=self.options.sockets,
                verdict="unknown",
                expected=self.expected.get(lesson.id, "ok"),
                symptom=symptom,
                seconds=time.monotonic() - self.started,
                details=details,
            )
        )

    def _dump_stack(self) -> str:
        try:
            os.kill(self.pid, worker.DUMP_SIGNAL)
        except ProcessLookupError:
            return ""
        end, size = time.monotonic() + DUMP_WAIT, -1
        while time.monotonic() < end:  # faulthandler writes from the signal handler; wait till done
            time.sleep(0.05)
            now = os.fstat(self.stack_file.fileno()).st_size
            if now and now == size:
                break
            size = now
        self.stack_file.seek(0)
        return self.stack_file.read().decode(errors="replace")[-20_000:]

    def _stop(self) -> int:
        """Kill the worker's process group, reap the worker; its wait status as a return code."""
        if self.reaped:
            return 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        os.close(self.pipe)
        self.stack_file.close()
        return os.waitstatus_to_exitcode(status)
