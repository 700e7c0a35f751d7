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
- `raised-probe-recorded`: the heartbeat's probe, raising once, leaves a record that names
  the exception on the decode manager (hardened: `heartbeat_errors`), found as any string
  reachable from the manager, not by name: not only a log line.
- `restarts-back-off`: each of those asyncio loops, made to raise on every run, waits at
  least 0.1 s before its first restart, doubling to 5 s, and never more than 5 s.
- `returned-loop-stays-ended`: with the dispatcher's worker channel broken for good, the
  loop that gives up (returns on purpose) is not run again.
"""

from __future__ import annotations

import logging
import threading
import types
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
OPAQUE = (types.ModuleType, type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
INFRASTRUCTURE = ("threading", "logging", "asyncio", "concurrent", "queue", "_thread", "socket", "zmq")


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


@dataclass
class HeartbeatRun:
    """What the heartbeat did around one raising probe (`_heartbeat_world`)."""

    text: str  # the injected exception's message
    started: list[threading.Thread]  # the manager's loops: the threads that waited on its clock
    gone: list[str]  # those of them dead after the raise
    probed: int  # `/health` probes in the two intervals after it
    unraised: bool  # the fault was never reached (no probe ran)
    died: str  # the errors that ended threads, described
    kept: list[str]  # the strings the manager holds afterwards that name the exception


def _heartbeat_world(variant: ModuleType) -> HeartbeatRun:
    """The heartbeat's probe raises once (its `/health` call); the run watches two intervals
    more. The manager's loops are the threads that wait on its clock (no other thread has it)."""
    clock, net, hooks = WatchedClock(), MockNetwork(), Hooks()
    net.add_prefill(PREFILL)
    manager = variant.KVManager(net, HB, clock, hooks)
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
    kept = [s for s in strings_held(manager, skip=(net, clock, hooks)) if text in s]
    died = errors.describe() if errors.errors else ""
    return HeartbeatRun(text, started, gone, probed, bool(faults), died, kept)


def strings_held(root: object, skip: tuple[object, ...] = ()) -> Iterator[str]:
    """Every string reachable from `root` through its attributes and containers, not walking
    into `skip` (the suite's transport, clock and hooks), threads, loggers, locks, modules,
    classes or functions: what a component keeps of what happened to it, wherever a fix
    keeps it (a variant loaded from a path has no `reference.` module name: not a filter)."""
    seen, stack = {id(s) for s in skip}, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, OPAQUE) or type(obj).__module__.startswith(INFRASTRUCTURE):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            stack.extend([*obj.keys(), *obj.values()])
        elif isinstance(obj, list | tuple | set | frozenset | deque):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values())


def _heartbeat_raises_once(variant: ModuleType, logged: list[str]) -> list[str]:
    """The heartbeat's probe raises once: the thread logs it and probes again."""
    run = _heartbeat_world(variant)
    if run.unraised or not run.started:
        return ["the decode manager's heartbeat started no thread that probed (cannot judge it)"]
    problems = []
    if run.gone or not run.probed:
        why = f"; {run.died}" if run.died else ""
        problems.append(
            f"the decode manager's heartbeat thread {', '.join(run.gone) or run.started[0].name} raised on "
            f"its probe and was gone: no probe in the next {2 * HB.heartbeat_interval:g} s{why}"
        )
    if not any(run.text in line for line in logged):
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


def raised_probe_recorded(variant: ModuleType, options: Options) -> Observation:
    with error_log():
        run = _heartbeat_world(variant)
    if run.unraised or not run.started:
        return Observation("unknown", "the decode manager's heartbeat started no thread that probed")
    if not run.kept:
        return Observation(
            "bug",
            f"the heartbeat's probe raised ({run.text!r}) and the manager keeps no record of it: "
            f"nothing reachable from it names the error{'; ' + run.died if run.died else ''}",
        )
    return Observation("ok", f"the heartbeat's raising probe is recorded on the manager: {run.kept[0]!r}")


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
    Check("raised-probe-recorded",
          "a heartbeat probe that raises leaves a record naming its error on the decode manager, not only in "
          "the log",
          f"HARDEN(supervised-loops) item 'the heartbeat's probe is wrapped the same way: log, count', "
          f"residual after {PR}",
          # the lesson's components, as `raised-loop-runs-again`: without the dispatcher, `unknown`
          raised_probe_recorded, ("DPDispatcher", "BootstrapServer", "KVManager")),
    Check("restarts-back-off",
          "a loop that raises on every run restarts after 0.1 s, doubling to 5 s",
          f"HARDEN(supervised-loops) item 'back off 0.1 s doubling to 5 s', residual after {PR}",
          restarts_back_off, ("DPDispatcher", "BootstrapServer")),
    Check("returned-loop-stays-ended",
          "a loop that returns on purpose (the listener giving up on a broken channel) is not run again",
          f"HARDEN(supervised-loops) item 'a loop that returns on purpose stays ended', residual after {PR}",
          returned_loop_stays_ended),
)  # fmt: skip
