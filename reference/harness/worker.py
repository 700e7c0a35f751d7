"""The child side of an isolated lesson run: a forked worker that loads one variant and
runs lessons against it, reporting each step to its parent as a frame over a pipe.

Frames are `(kind, *payload)` tuples, pickled with a 4-byte length prefix:
`("phase", "import" | "scenario", lesson_index)`, `("loaded", name, expected_by_lesson)`,
`("progress", done, total, fired)` (stress trials), `("result", Result)`,
`("error", line)` (the variant could not be loaded), `("interrupted", line)`
(KeyboardInterrupt), `("done", non_daemon_threads_left)`.

The worker is its own process group (so the parent can kill it with everything it
started), dumps every thread's stack to `stack_file` on SIGUSR1 (the parent asks when
the time bound is hit), and always ends with `os._exit`: a stray non-daemon thread or a
pending `atexit` of the variant cannot keep it alive, and it never returns into its
parent's code (the CLI, or pytest).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import signal
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any, NoReturn

from reference.harness import progress
from reference.harness.lesson import Lesson, Options, run_lesson
from reference.harness.specs import VariantSpec
from reference.variants import VariantError

HEADER = struct.Struct(">I")
DUMP_SIGNAL = signal.SIGUSR1
PROGRESS_EVERY = 0.1  # seconds between two progress frames
PR_SET_PDEATHSIG = 1


def encode(frame: tuple[Any, ...]) -> bytes:
    try:
        data = pickle.dumps(frame)
    except Exception:  # a result whose details cannot be pickled: keep their text
        kind, result = frame
        result.details = {key: repr(value) for key, value in result.details.items()}
        data = pickle.dumps((kind, result))
    return HEADER.pack(len(data)) + data


def decode(buffer: bytearray) -> tuple[Any, ...] | None:
    """Take one whole frame off the front of `buffer` (None: not all of it came yet)."""
    if len(buffer) < HEADER.size:
        return None
    (size,) = HEADER.unpack_from(buffer)
    if len(buffer) < HEADER.size + size:
        return None
    frame = pickle.loads(bytes(buffer[HEADER.size : HEADER.size + size]))
    del buffer[: HEADER.size + size]
    return frame


def serve(
    spec: VariantSpec, lessons: Sequence[Lesson], options: Options, out: int, stack_file: IO
) -> NoReturn:
    """The forked child's whole life (see the module docstring); never returns."""
    # Whatever escapes (a broken pipe, a KeyboardInterrupt while reporting) ends the
    # worker without "done"; the parent reports that.
    with contextlib.suppress(BaseException):
        _become_worker(stack_file)
        _run(spec, lessons, options, lambda frame: _write(out, encode(frame)))
    _flush_stdio()
    os._exit(0)


def _run(spec: VariantSpec, lessons: Sequence[Lesson], options: Options, send: Any) -> None:
    send(("phase", "import", None))
    try:
        variant = spec.load()
    except KeyboardInterrupt:
        send(("interrupted", f"KeyboardInterrupt while importing {spec.label}"))
        return
    except VariantError as exc:
        send(("error", str(exc)))
        return
    except BaseException as exc:  # e.g. load_sglang tripping over an upstream file
        send(("error", f"{spec.label} could not be loaded: {type(exc).__name__}: {exc}"))
        return
    send(("loaded", variant.name, {lesson.id: variant.expected_for(lesson.id) for lesson in lessons}))
    progress.listen(_throttled(send))
    for index, lesson in enumerate(lessons):
        send(("phase", "scenario", index))
        try:
            result = run_lesson(lesson, variant, options)
        except KeyboardInterrupt:
            send(("interrupted", f"KeyboardInterrupt in lesson {lesson.id} on {variant.name}"))
            return
        send(("result", result))
    _flush_stdio()
    main = threading.main_thread()
    left = [t.name for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]
    send(("done", left))


def _throttled(send: Any) -> progress.Listener:
    last = [0.0]

    def forward(done: int, total: int, fired: int) -> None:
        now = time.monotonic()
        if done in (0, total) or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            send(("progress", done, total, fired))

    return forward


def _become_worker(stack_file: IO) -> None:
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # the parent does it too; whichever runs first wins
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    faulthandler.register(DUMP_SIGNAL, file=stack_file, all_threads=True)
    _die_with_parent()


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker if its parent dies without stopping it (best effort)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
