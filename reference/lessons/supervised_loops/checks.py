"""Checks of lesson `supervised-loops`: every loop a component starts, not the story's one.

The story breaks one loop (the dispatcher's watchdog) once. A fix that supervises only
that loop, restarts without a back-off, or restarts a loop that ended on purpose passes
it. These checks hold for every long-lived loop the components start, found as what
runs (`loops.py`: the tasks on the component's event loop, each loop named by the
component method its body runs; the heartbeat: the threads `start_heartbeat()` started),
with faults injected where each loop waits (`LoopFault`) or into what it calls (the
heartbeat's `/health` probe). Each cites the `HARDEN(supervised-loops)` item it checks
(the lesson README's Hardened list).

- `raised-loop-runs-again`: each loop of the DP dispatcher and the bootstrap server,
  made to raise once, logs the exception and runs again within the 5 s back-off cap; the
  decode manager's heartbeat thread, whose probe raises once, logs it and probes again.
- `restarts-back-off`: each of those asyncio loops, made to raise on every run, waits at
  least 0.1 s before its first restart, doubling to 5 s, and never more than 5 s.
- `returned-loop-stays-ended`: with the dispatcher's worker channel broken for good, the
  loop that gives up (returns on purpose) is not run again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.clock import VirtualClock
from reference.common.supervise import FIRST_BACKOFF, MAX_BACKOFF
from reference.config import DispatcherConfig, ManagerConfig
from reference.harness.capture import thread_errors
from reference.harness.checks import Check
from reference.harness.loop_capture import loop_errors
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.hooks import Hooks
from reference.lessons.supervised_loops.loops import (
    EARLY,
    Run,
    VirtualLoop,
    advance_to_next,
    escape,
    next_run,
    runs,
)
from reference.lessons.task_refs.bootstrap_probe import INTERVAL, TTL, on_server_loop
from reference.transport.kits import kit
from reference.transport.mock import MockNetwork

T = TypeVar("T")
PR = "https://github.com/sgl-project/sglang/pull/33048"
RANKS = 2
CONFIG = DispatcherConfig()
HB = ManagerConfig(heartbeat_interval=5.0, heartbeat_max_failures=2)
PREFILL = "10.0.0.1:8998"
SLACK = 0.01  # seconds past the 5 s cap a restart may come (timer resolution, with margin)
ROUNDS = 8  # consecutive failures of one loop: back-offs 0.1, 0.2, ... 3.2, 5, 5
WATCH = 120.0  # virtual seconds a check watches a loop that ended
BROKEN = 10**9  # receive errors in a row: the worker channel is broken for good
DISPATCHER, SERVER = "the dispatcher", "the bootstrap server"
Gaps = dict[str, list[float]]  # loop -> seconds from each failure to its next run


@contextmanager
def error_log() -> Iterator[list[str]]:
    """The text (message and exception) of every ERROR record, from any logger and thread."""
    texts: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            exc = record.exc_info[1] if record.exc_info else None
            texts.append(f"{record.getMessage()} {type(exc).__name__ if exc else ''}: {exc}")

    handler, root = Keep(level=logging.ERROR), logging.getLogger()
    root.addHandler(handler)
    try:
        yield texts
    finally:
        root.removeHandler(handler)


def _expected(rounds: int) -> list[float]:
    return [min(FIRST_BACKOFF * 2**i, MAX_BACKOFF) for i in range(rounds)]


# --- the probes, each a coroutine on the component's own loop -------------------------------


async def _raise_once(loop: JumpLoop, component: object, label: str, logged: list[str]) -> list[str]:
    """Each loop raises once: it must be logged and run again within the back-off cap."""
    started = runs(loop, component)
    if not started:
        return [f"{label} started no background loop (cannot judge it)"]
    problems = []
    for name, run in sorted(started.items()):
        text = f"injected into {label}'s {name}"
        since = await escape(loop, run, text)
        if since is None:
            problems.append(f"{label}'s {name} kept every injected error inside (cannot judge it)")
            continue
        gap = await next_run(loop, component, run, since, MAX_BACKOFF + SLACK)
        if gap is None:
            problems.append(f"{label}'s {name} raised and was gone: not run again within {MAX_BACKOFF:g} s")
        if not any(text in line for line in logged):
            problems.append(f"{label}'s {name} raised and nothing logged its exception")
    return problems


async def _raise_every_run(loop: JumpLoop, component: object, label: str, gaps: Gaps) -> list[str]:
    """Each loop raises on every run: its restarts must wait 0.1 s doubling to 5 s."""
    problems = []
    for name in sorted(runs(loop, component)):
        gaps[f"{label}.{name}"] = measured = []
        for i, due in enumerate(_expected(ROUNDS)):
            run = runs(loop, component).get(name)
            since = None if run is None else await escape(loop, run, f"round {i} of {label}'s {name}")
            if run is None or since is None:
                break
            gap = await next_run(loop, component, run, since, MAX_BACKOFF + SLACK)
            if gap is None and i == 0:
                break  # not restarted at all: `raised-loop-runs-again`'s finding
            if gap is None:
                problems.append(f"{label}'s {name}, raising on every run, was not run again within "
                                f"{MAX_BACKOFF:g} s (the cap) after failure {i + 1}")  # fmt: skip
                break
            measured.append(round(gap, 3))
            if gap < due - EARLY:
                problems.append(
                    f"{label}'s {name}, raising on every run, restarted {gap:.3f} s after failure {i + 1} "
                    f"(its back-off is {due:g} s; 0.1 s doubling to 5 s)"
                )
                break
    return problems


async def _one_returns(loop: JumpLoop, component: object, logged: list[str]) -> tuple[Run, float] | None:
    """Step the clock until a loop's run ends with nothing logged (it returned); None if none does."""
    before, start = runs(loop, component), loop.time()
    while True:
        for run in before.values():
            if not run.alive and not logged:
                return run, loop.time() - start
        if not await advance_to_next(loop, start + WATCH):
            return None


# --- the worlds: a dispatcher, a bootstrap server, a decode manager -------------------------------


def _on_dispatcher(variant: ModuleType, probe: Callable[[JumpLoop, Any, Any], Coroutine[Any, Any, T]]) -> T:
    async def main(loop: JumpLoop) -> T:
        pool = kit("mock").worker_pool(RANKS)
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        with loop_errors(loop):  # a bare loop's "Task exception was never retrieved"
            try:
                await pool.start()
                dispatcher.start()
                await loop.settle()
                return await probe(loop, dispatcher, pool)
            finally:
                await dispatcher.close()
                await pool.close()

    return run_on_jump_loop(main, VirtualLoop())


def _on_server(variant: ModuleType, probe: Callable[[JumpLoop, Any], Coroutine[Any, Any, T]]) -> T:
    loop = VirtualLoop()  # the server sleeps between rounds on its own clock, as upstream
    server = variant.BootstrapServer("127.0.0.1", 0, cleanup_interval=INTERVAL, entry_ttl=TTL,
                                     now=loop.time, loop=loop, listen=False)  # fmt: skip
    try:
        with loop_errors(loop), kit("mock").serving(server):
            on_server_loop(loop, loop.settle())
            return on_server_loop(loop, probe(loop, server))
    finally:
        if not loop.is_closed():
            loop.close()


class WatchedClock(VirtualClock):
    """A virtual clock that remembers which threads waited on it: the manager's own loops."""

    def __init__(self) -> None:
        super().__init__()
        self.waiters: set[threading.Thread] = set()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        self.waiters.add(threading.current_thread())
        return super().wait(stop, seconds)


def _heartbeat_raises_once(variant: ModuleType, logged: list[str]) -> list[str]:
    """The heartbeat's probe raises once (its `/health` call): the thread logs it and probes again.
    The manager's loops are the threads that wait on its clock (no other thread has it)."""
    clock, net = WatchedClock(), MockNetwork()
    net.add_prefill(PREFILL)
    manager = variant.KVManager(net, HB, clock, Hooks())
    manager.add_prefill(PREFILL)
    text, healthy = "injected into the heartbeat's /health probe", net.health
    faults = [LookupError(text)]

    def health(addr: str) -> bool:
        if faults:
            raise faults.pop()
        return healthy(addr)

    with thread_errors() as errors:
        try:
            manager.start_heartbeat()
            clock.wait_for_sleepers(1)
            started = sorted(clock.waiters, key=lambda t: t.name)
            net.health = health  # type: ignore[method-assign,assignment]
            clock.advance(HB.heartbeat_interval)
            probes = net.health_probes
            clock.advance(2 * HB.heartbeat_interval)
            gone = [t.name for t in started if not t.is_alive()]
            probed = net.health_probes - probes
        finally:
            manager.close()
    if faults or not started:
        return ["the decode manager's heartbeat started no thread that probed (cannot judge it)"]
    problems = []
    if gone or not probed:
        why = f"; {errors.describe()}" if errors.errors else ""
        problems.append(
            f"the decode manager's heartbeat thread {', '.join(gone) or started[0].name} raised on its "
            f"probe and was gone: no probe in the next {2 * HB.heartbeat_interval:g} s{why}"
        )
    if not any(text in line for line in logged):
        problems.append("the heartbeat's probe raised and nothing logged its exception")
    return problems


# --- the checks ---------------------------------------------------------------------------------------


def raised_loop_runs_again(variant: ModuleType, options: Options) -> Observation:
    with error_log() as logged:
        problems = _on_dispatcher(variant, lambda loop, d, _: _raise_once(loop, d, DISPATCHER, logged))
        problems += _on_server(variant, lambda loop, s: _raise_once(loop, s, SERVER, logged))
        problems += _heartbeat_raises_once(variant, logged)
    fine = (
        "every loop of the dispatcher and the bootstrap server, made to raise once, logged it and ran "
        "again within the 5 s cap; the heartbeat logged its probe's error and probed again"
    )
    return _verdict(problems, fine)


def restarts_back_off(variant: ModuleType, options: Options) -> Observation:
    gaps: dict[str, list[float]] = {}
    with error_log():
        problems = _on_dispatcher(variant, lambda loop, d, _: _raise_every_run(loop, d, DISPATCHER, gaps))
        problems += _on_server(variant, lambda loop, s: _raise_every_run(loop, s, SERVER, gaps))
    if not any(gaps.values()):
        return Observation(
            "unknown", "no loop ran again after it raised (raised-loop-runs-again judges that)"
        )
    shown = "; ".join(f"{name}: {', '.join(map(str, seen))} s" for name, seen in sorted(gaps.items()) if seen)
    fine = f"each loop, raising on every run, backed off 0.1 s doubling to 5 s ({shown})"
    return _verdict(problems, fine, {"restart_gaps": gaps})


async def _broken_channel(loop: JumpLoop, dispatcher: Any, pool: Any, logged: list[str]) -> list[str] | None:
    pool.recv_errors = BROKEN  # every receive fails from now on
    await pool.send(0, {"kind": "encode", "req_id": "wake", "payload": "p"})  # a reply wakes the reader
    ended = await _one_returns(loop, dispatcher, logged)
    if ended is None:
        return None
    run, at = ended
    again = await next_run(loop, dispatcher, run, loop.time(), WATCH)
    if again is None:
        return []
    return [f"the dispatcher's {run.name} returned on purpose {at:.1f} s after the worker channel broke "
            f"for good and was run again {again:.1f} s later"]  # fmt: skip


def returned_loop_stays_ended(variant: ModuleType, options: Options) -> Observation:
    with error_log() as logged:
        problems = _on_dispatcher(variant, lambda loop, d, pool: _broken_channel(loop, d, pool, logged))
    if problems is None:
        return Observation("unknown", f"no loop returned within {WATCH:g} s of the worker channel breaking")
    return _verdict(problems, "the loop that gave up on the broken worker channel (returned) stayed ended")


def _verdict(problems: list[str], fine: str, details: dict[str, Any] | None = None) -> Observation:
    judged = [p for p in problems if "cannot judge" not in p]
    if judged:
        return Observation("bug", "; ".join(problems), details=details or {})
    if problems:
        return Observation("unknown", "; ".join(problems), details=details or {})
    return Observation("ok", fine, details=details or {})


CHECKS = (
    Check("raised-loop-runs-again",
          "every loop of the dispatcher, the bootstrap server and the heartbeat, when it raises, is logged "
          "and runs again",
          f"HARDEN(supervised-loops) items 'each background loop runs supervised: log, run again' and 'the "
          f"heartbeat's probe is wrapped', residual after {PR}",
          raised_loop_runs_again, ("DPDispatcher", "BootstrapServer", "KVManager")),
    Check("restarts-back-off",
          "a loop that raises on every run restarts after 0.1 s, doubling to 5 s",
          f"HARDEN(supervised-loops) item 'back off 0.1 s doubling to 5 s', residual after {PR}",
          restarts_back_off, ("DPDispatcher", "BootstrapServer")),
    Check("returned-loop-stays-ended",
          "a loop that returns on purpose (the listener giving up on a broken channel) is not run again",
          f"HARDEN(supervised-loops) item 'a loop that returns on purpose stays ended', residual after {PR}",
          returned_loop_stays_ended),
)  # fmt: skip
