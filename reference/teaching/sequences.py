"""Interleavings and topologies as data: who does what, in which order, with whom.

A `Sequence` is a list of `Step`s between named actors (threads, locks, tables,
processes). `plots.sequence_picture` draws it as a sequence diagram. The steps
describe the order each lesson's scenario forces with its hooks (see the scenario
module docstrings); the notebooks then run that order live.

A `Topology` is boxes at grid positions and labelled arrows between them: who talks
to whom. `plots.topology_picture` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["plain", "bug", "fix", "error", "note"]


@dataclass(frozen=True)
class Step:
    source: str
    target: str  # the same actor as `source`: a note on that actor's lifeline
    label: str
    kind: Kind = "plain"


@dataclass(frozen=True)
class Sequence:
    title: str
    actors: tuple[str, ...]
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        unknown = {n for s in self.steps for n in (s.source, s.target)} - set(self.actors)
        if unknown:
            raise ValueError(f"steps name actors not in {self.actors}: {sorted(unknown)}")


@dataclass(frozen=True)
class Node:
    name: str
    x: float
    y: float
    group: str = ""  # e.g. "decode" or "prefill": boxes of one group share a colour


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str
    bend: float = 0.0  # curvature, to keep two arrows between the same boxes apart


@dataclass(frozen=True)
class Topology:
    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def __post_init__(self) -> None:
        names = {node.name for node in self.nodes}
        unknown = {n for e in self.edges for n in (e.source, e.target)} - names
        if unknown:
            raise ValueError(f"edges name nodes that do not exist: {sorted(unknown)}")


_RESURRECT_ACTORS = ("decode scheduler", "abort() (late)", "update_status", "request_status")


def _resurrect(fixed: bool) -> Sequence:
    S, A, U, T = _RESURRECT_ACTORS
    last = (
        Step(U, T, "room absent + Failed: return (nothing stored)", "fix")
        if fixed
        else Step(U, T, "room absent: store it -> {7: Failed}", "bug")
    )
    ending = (
        Step(T, T, "{} : room 7 stays cleared", "note")
        if fixed
        else Step(T, T, "{7: Failed} forever: nobody clears 7 again (leak)", "error")
    )
    return Sequence(
        f"failed-resurrect, {'fixed' if fixed else 'buggy'} form",
        _RESURRECT_ACTORS,
        (
            Step(S, U, "update_status(7, WaitingForInput)"),
            Step(U, T, "{7: WaitingForInput}"),
            Step(S, T, "request done: clear(7) pops the room -> {}"),
            Step(A, U, "record_failure(7); update_status(7, Failed)"),
            last,
            ending,
        ),
    )


_LIVE_SET_ACTORS = ("heartbeat thread", "connection_lock", "tracker[addr] set", "mori status thread")


def _live_set(fixed: bool) -> Sequence:
    H, L, T, M = _LIVE_SET_ACTORS
    take = (
        Step(H, T, "affected = list(tracker.get(addr))  # a snapshot", "fix")
        if fixed
        else Step(H, T, "affected = tracker.get(addr)  # the same live set", "bug")
    )
    after = (
        (
            Step(H, H, "next(affected): a list, unchanged -> rooms 2, 3 failed", "fix"),
            Step(H, H, "heartbeat keeps probing: a later failure is detected", "note"),
        )
        if fixed
        else (
            Step(H, T, "next(affected): RuntimeError: Set changed size during iteration", "error"),
            Step(H, H, "thread dies: rooms 2, 3 never failed, no later failure detected", "error"),
        )
    )
    return Sequence(
        f"live-set-race, {'fixed' if fixed else 'buggy'} form",
        _LIVE_SET_ACTORS,
        (
            Step(M, T, "room 4 done: rooms = tracker.get(addr)  # keeps a reference"),
            Step(H, H, "2 failed /health probes: _handle_node_failure(addr)"),
            Step(H, L, "acquire"),
            take,
            Step(H, T, "tracker.pop(addr)"),
            Step(H, L, "release"),
            Step(H, H, "for room in affected: room 1 -> Failed"),
            Step(M, T, "rooms.discard(4)  # no lock"),
            *after,
        ),
    )


_STALE_ACTORS = (
    "decode receivers",
    "connection_pool",
    "bootstrap server",
    "prefill, old ports",
    "prefill, new ports",
)


def _stale(fixed: bool) -> Sequence:
    R, P, B, OLD, NEW = _STALE_ACTORS
    ending = (
        (
            Step(R, P, "invalidate: delete the key only if pool[key] is G1", "fix"),
            Step(R, B, "next request: a miss: GET /route -> new ports (G2)", "fix"),
            Step(R, NEW, "REGISTER, METADATA -> Success; and so on", "fix"),
        )
        if fixed
        else (
            Step(R, R, "every later request: the same key, the same G1, no GET /route", "bug"),
            Step(R, R, "fails forever (until the decode itself restarts)", "error"),
        )
    )
    return Sequence(
        f"stale-bootstrap, {'fixed' if fixed else 'buggy'} form",
        _STALE_ACTORS,
        (
            Step(R, B, "first request: GET /route per rank -> ports 41000, 41001"),
            Step(R, P, "cache key -> G1 (the old ports)"),
            Step(R, OLD, "REGISTER, METADATA -> Success"),
            Step(OLD, OLD, "process restarts (same bootstrap address)", "note"),
            Step(NEW, B, "PUT /route: new ports; /health still 200"),
            Step(R, P, "next request: key hit -> G1"),
            Step(R, OLD, "METADATA: send times out -> Failed", "error" if not fixed else "plain"),
            *ending,
        ),
    )


_TASK_ACTORS = ("DPDispatcher.start()", "event loop", "watchdog task", "exit notices", "worker rank 1")


def _tasks(fixed: bool) -> Sequence:
    S, L, W, X, K = _TASK_ACTORS
    held = (
        (Step(S, S, "self.background_tasks.add(task); on done: discard", "fix"),)
        if fixed
        else (Step(S, S, "result dropped: nothing but the loop's weak set holds it", "bug"),)
    )
    after = (
        (
            Step(L, W, "gc.collect(): reachable from background_tasks, kept", "fix"),
            Step(K, X, "exits: post a notice"),
            Step(X, W, "wake: mark rank 1 dead, fail its requests now (503)", "fix"),
        )
        if fixed
        else (
            Step(L, W, "gc.collect(): unreachable -> 'Task was destroyed but it is pending!'", "error"),
            Step(K, X, "exits: post a notice; no one is waiting"),
            Step(S, S, "its requests hang 180 s (504); new ones still routed to rank 1", "error"),
        )
    )
    return Sequence(
        f"task-refs, {'fixed' if fixed else 'buggy'} form (the DP dispatcher's watchdog)",
        _TASK_ACTORS,
        (
            Step(S, L, "create_task(_worker_watchdog())"),
            *held,
            Step(W, X, "await an Event only this task reaches (weakly held waiter)"),
            *after,
        ),
    )


INTERLEAVINGS: dict[str, dict[str, Sequence]] = {
    "failed-resurrect": {"buggy": _resurrect(False), "fixed": _resurrect(True)},
    "live-set-race": {"buggy": _live_set(False), "fixed": _live_set(True)},
    "stale-bootstrap": {"buggy": _stale(False), "fixed": _stale(True)},
    "task-refs": {"buggy": _tasks(False), "fixed": _tasks(True)},
}


def interleaving(lesson: str, variant: str) -> Sequence:
    try:
        return INTERLEAVINGS[lesson][variant]
    except KeyError:
        raise ValueError(f"no interleaving drawn for {lesson!r} / {variant!r}") from None
