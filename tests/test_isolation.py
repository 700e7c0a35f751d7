"""Isolated lesson runs end, whatever the lesson's code does (reference/harness/isolation.py).

Each test runs made-up lessons whose bodies misbehave in one way (block the main
thread, block an event loop, exit the process, start processes and hang) through
`run_isolated` with a 3 s bound (ample for what must finish, on this machine under
load), and checks the verdict, the symptom's phase and stuck frame, the stack in the
details, and that nothing the worker started survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading

import psutil
import pytest

from reference.harness.isolation import (
    DEFAULT_TIMEOUT,
    PER_TRIAL,
    PROCESSES_TIMEOUT,
    Interrupted,
    IsolationError,
    Watch,
    budget,
    check_loads,
    run_isolated,
)
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Observation
from reference.harness.specs import VariantSpec
from reference.harness.stacks import stuck_at
from reference.lessons import LESSONS

FIXED = VariantSpec("shipped", "fixed")
BAD = "tests/bad_impls"
BOUND = 3


def lesson(body, lesson_id="made-up") -> Lesson:
    return Lesson(id=lesson_id, title="", upstream="", needs=(), body=lambda module, options: body())


def holds() -> Observation:
    return Observation("ok", "held")


def block_main_thread() -> Observation:
    threading.Event().wait()
    raise AssertionError("unreachable")


async def blocking_coroutine() -> None:
    threading.Event().wait()  # blocks the loop itself: no await ever returns


def block_event_loop() -> Observation:
    asyncio.run(blocking_coroutine())
    raise AssertionError("unreachable")


def test_a_blocked_main_thread_is_unknown_with_its_stack():
    (result,) = run_isolated([lesson(block_main_thread)], FIXED, Options(), timeout=BOUND)
    line = block_main_thread.__code__.co_firstlineno + 1
    assert result.verdict == "unknown"
    where = f"main thread at tests/test_isolation.py:{line} in block_main_thread"
    assert result.symptom == f"hit its time bound ({BOUND} s) in scenario, {where}"
    assert f'test_isolation.py", line {line} in block_main_thread' in result.details["stack"]
    assert BOUND <= result.seconds < BOUND + 5


def test_a_blocked_event_loop_names_the_coroutine():
    (result,) = run_isolated([lesson(block_event_loop)], FIXED, Options(), timeout=BOUND)
    assert result.verdict == "unknown"
    line = blocking_coroutine.__code__.co_firstlineno + 1
    assert result.symptom.endswith(f"main thread at tests/test_isolation.py:{line} in blocking_coroutine")


def test_the_lessons_after_a_hang_run_in_a_fresh_worker():
    lessons = [lesson(holds, "first"), lesson(block_main_thread, "stuck"), lesson(holds, "after")]
    results = run_isolated(lessons, FIXED, Options(), timeout=BOUND)
    verdicts = [(r.lesson, r.verdict) for r in results]
    assert verdicts == [("first", "ok"), ("stuck", "unknown"), ("after", "ok")]


def test_a_process_exit_inside_a_lesson_is_unknown():
    def exits() -> Observation:
        os._exit(5)

    def killed() -> Observation:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    results = run_isolated([lesson(exits), lesson(killed)], FIXED, Options(), timeout=5)
    assert [r.symptom for r in results] == [
        "the variant ended the worker process in scenario (exit status 5)",
        "the variant ended the worker process in scenario (killed by SIGKILL)",
    ]


def test_what_a_hung_lesson_started_is_killed_with_it(tmp_path):
    pid_file = tmp_path / "pid"

    def starts_a_process_and_hangs() -> Observation:
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pid_file.write_text(str(sleeper.pid))
        threading.Event().wait()
        raise AssertionError("unreachable")

    (result,) = run_isolated([lesson(starts_a_process_and_hangs)], FIXED, Options(), timeout=BOUND)
    assert result.verdict == "unknown"
    pid = int(pid_file.read_text())
    with contextlib.suppress(psutil.NoSuchProcess):  # gone already
        psutil.Process(pid).wait(timeout=5)  # killed: reaped by init soon (TimeoutExpired if alive)


def test_a_stray_non_daemon_thread_does_not_keep_the_worker_alive():
    def leaves_a_thread() -> Observation:
        threading.Thread(target=threading.Event().wait, name="left-behind").start()
        return Observation("ok", "held")

    watch = Watch()
    (result,) = run_isolated([lesson(leaves_a_thread)], FIXED, Options(), timeout=5, watch=watch)
    assert result.verdict == "ok"
    assert watch.notes == ["variant 'fixed' left non-daemon thread(s) running: left-behind"]


def test_keyboard_interrupt_in_a_lesson_is_an_interruption():
    def interrupted() -> Observation:
        raise KeyboardInterrupt

    with pytest.raises(Interrupted, match="KeyboardInterrupt in lesson made-up on fixed") as caught:
        run_isolated([lesson(interrupted)], FIXED, Options(), timeout=5)
    assert caught.value.exit_status == 130


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("no_classes.py", None),
        ("raises_at_import.py", "raised on import: RuntimeError: broken on purpose at import"),
        ("exits_at_import.py", "exited the process during import (exit status 7)"),
        ("hangs_at_import.py", f"hit its time bound ({BOUND} s) in import, main thread at"),
        ("interrupted_at_import.py", "interrupted: KeyboardInterrupt while importing --impl module"),
    ],
)
def test_check_loads_reports_a_module_that_cannot_be_imported(module, message):
    spec = VariantSpec("impl", f"{BAD}/{module}")
    if message is None:
        check_loads(spec, timeout=5)  # importable, even with nothing in it
        return
    with pytest.raises(IsolationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_loads(spec, timeout=BOUND)


def test_stress_progress_reaches_the_watch():
    shown: list[str] = []
    watch = Watch(show=shown.append)
    (result,) = run_isolated([LESSONS["live-set-race"]], FIXED, Options(repeat=3), watch=watch)
    assert result.details["stress"]["trials"] == 3
    assert watch.last == ("live-set-race", "fixed", 3, 3, 0)
    assert shown[0] == "live-set-race on fixed: 0/3 trials, 0 fired"
    assert shown[-1] == "live-set-race on fixed: 3/3 trials, 0 fired"
    assert watch.so_far() == "live-set-race on fixed: race fired in 0/3 trials (0.0%) of 3 asked"


def test_the_default_bound_grows_with_the_stress_trials():
    race, plain = LESSONS["live-set-race"], LESSONS["failed-resurrect"]

    assert budget(race, Options(), None) == DEFAULT_TIMEOUT
    assert budget(race, Options(repeat=1000), None) == DEFAULT_TIMEOUT + 1000 * PER_TRIAL
    assert budget(plain, Options(repeat=1000), None) == DEFAULT_TIMEOUT  # no stress mode
    assert budget(race, Options(repeat=1000), 3.0) == 3.0  # an explicit --timeout is exact
    assert budget(race, Options(transport="loopback"), None) == PROCESSES_TIMEOUT


def test_the_bound_grows_with_the_deep_checks_budget():
    """Twice the lesson's deep-check budget on top (a search that finds a bug may shrink
    as long again); with --quick, nothing."""
    race = LESSONS["live-set-race"]
    assert budget(race, Options(budget=7.0), None) == DEFAULT_TIMEOUT + 14.0
    assert budget(race, Options(budget=7.0), 3.0) == 3.0 + 14.0
    assert budget(race, Options(budget=7.0, quick=True), None) == DEFAULT_TIMEOUT


def test_stuck_at_prefers_the_variants_code_over_the_harness():
    dump = (
        "Thread 0x01 (most recent call first):\n"
        f'  File "{threading.__file__}", line 320 in wait\n'
        '  File "/home/me/my_fix/manager.py", line 7 in update_status\n'
        "\n"
        "Current thread 0x02 (most recent call first):\n"
        f'  File "{threading.__file__}", line 1100 in join\n'
        f'  File "{os.path.abspath("reference/lessons/x/scenario.py")}", line 3 in observe\n'
    )
    assert stuck_at(dump) == "a thread at /home/me/my_fix/manager.py:7 in update_status"
    assert stuck_at(dump.split("\n\n")[1]) == "main thread at reference/lessons/x/scenario.py:3 in observe"
    assert stuck_at("") == ""
