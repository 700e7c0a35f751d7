"""A simulation run as data: a topology, the fault kinds switched on, and a list of steps.

One plan decides everything a run does, so a plan is also its replay file. Hypothesis
draws plans (`plans(profile)`) and shrinks a failing one to a short list of steps; the
runner (`cluster.py`) executes a plan the same way on every machine.

Swarm testing (Groce et al., ISSTA 2012): each plan first picks which of its profile's
fault kinds are on, so runs without, say, restarts but with many dropped messages are as
common as runs with everything, and rare combinations get exercised.

A step is `(kind, a, b)`: `a` and `b` pick among what exists when the step runs (a
manager, a prefill, an open request, an ended room) modulo their count, so every list
of steps is valid and shrinking never makes a plan meaningless.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from hypothesis import strategies as st

SOCKETS = ("upstream", "fail-fast")  # a plan draws one; the run's own setting first (shrinks to it)

# The decode scheduler's own steps, in every profile, each with its weight in a draw:
# `request` opens, inits and sends one new request; `stream` is a steady stream of them
# (6 requests, (a mod 4 + 2) x 20 s apart: 100 to 500 s of them); `poll` is one scheduler pass that
# polls every open request; `wait` lets (a + 1) x 20 s of virtual time pass (then a pass).
WORKLOAD = {"request": 6, "stream": 4, "poll": 2, "wait": 4, "tick": 2, "open": 1, "init": 1, "send": 1,
            "abort": 1, "end_status": 2}  # fmt: skip
# Faults and concurrent writers, switched on per profile and per run (swarm).
FAULTS = {
    "fail_open": "the decode-status thread writes Failed for an open room",
    "late_failed": "a late Failed for an ended, cleared room (decode-status thread, node failure)",
    "late_abort": "a late abort() of an ended, cleared request",
    "late_status": "a status path that saw the room open writes Transferring or Success after clear()",
    "late_record": "a failure path that saw the room open records a reason and writes Failed after clear()",
    "mooncake": "(for the whole run) no decode-status thread cleans up: clear() is all a request's end does",
    "abort_clear": "the scheduler aborts an open request and clears it at once (abort(), then clear())",
    "rank_failed": "the request failed on another decode rank: the scheduler takes its failure_exception() "
    "(the all-reduced poll reads Failed) although its own poll has not failed, and polls it once more",
    "reuse": "a new request reuses the room id of an ended one",
    "reuse_late_answer": "a new request (opened, inited, sent) reuses an ended room id just after the decode "
    "inbox counted a prefill rank's answer to its previous request (taken while it was open, counted after "
    "its clear())",
    "restart_new": "a prefill restarts behind its bootstrap address on new ports",
    "restart_same": "a prefill restarts behind its bootstrap address on the same ports",
    "restart_in_flight": "a request's metadata goes out and its prefill restarts on new ports at once",
    "kill": "a prefill dies (it is revived later, on new ports)",
    "restart_before_send": "(fail-fast sockets only) a request inits, its prefill restarts on new ports, "
    "then the scheduler sends its metadata (the send raises)",
    "stuck": "a prefill restarts and its ranks take twice the waiting timeout to register (/route: 503)",
    "pause": "a prefill stops answering for longer than the waiting timeout, /health still up",
    "drop": "the next message to a prefill rank is lost",
    "slow_send": "a prefill stops taking messages and a metadata send to it blocks 1 s per message; "
    "the scheduler polls it 0.5 s before its waiting timeout, counted from the send's return",
    "refuse_send": "a new request inits, and one of its prefill's ranks refuses connects (EMFILE) while the "
    "scheduler sends its metadata and polls it",
    "delay_status": "the next message to a decode inbox is held for two heartbeat intervals",
    "hb_miss": "one /health probe of a live prefill fails",
    "unhealthy": "a prefill's next three /health probes answer a pattern of 200s and misses (in turn: "
    "503, a connect after 2.5 s, an answer after 3.5 s) (upstream's timeout=(2, 3)); its ranks lose their "
    "messages meanwhile",
    "race_cleanup": "the decode-status thread, preempted in a cleanup, resumes inside the failure handler",
    "race_cleanup_late": "the decode-status thread, preempted in a cleanup, resumes after a failure, later",
    "timeout": "virtual time jumps past the waiting timeout",
    "quick_restart": "a prefill restarts, a request arrives, its ranks register 200 ms later; the scheduler "
    "polls every 1 ms meanwhile",
    "gc": "gc.collect() runs",
    "latency": "(for the whole run) every message takes a second: requests stay in flight until time passes",
}
KINDS = (*WORKLOAD, *FAULTS)
ON = 0.5  # each fault kind is on in half the runs: a run is about some of its faults, not all


@dataclass(frozen=True)
class Profile:
    """What a lesson's simulation may do: its fault kinds, and how long its runs are."""

    faults: tuple[str, ...]
    steps: int = 60  # at most this many steps a run
    weight: int = 1  # how often each fault kind that is on is drawn, against the workload's weights
    always: tuple[str, ...] = ()  # fault kinds on in every run (a swarm draws the others)
    steer: bool = True  # steer the search towards overlapping cache generations (`search.py`)


@dataclass
class Plan:
    seed: int  # the run's seed, for the record; the steps alone decide the run
    managers: int
    prefills: list[tuple[int, int]]  # (tp, cp) of each prefill
    sockets: str  # "upstream" or "fail-fast" (reference/transport/sockets.py)
    faults: list[str]
    steps: list[tuple[str, int, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        steps = [(str(k), int(a), int(b)) for k, a, b in data["steps"]]
        unknown = sorted({k for k, _, _ in steps} - set(KINDS))
        if unknown:
            raise ValueError(f"unknown step kind(s): {', '.join(unknown)}")
        prefills = [(int(tp), int(cp)) for tp, cp in data["prefills"]]
        return cls(int(data["seed"]), int(data["managers"]), prefills, str(data["sockets"]),
                   [str(f) for f in data["faults"]], steps)  # fmt: skip


def plans(
    profile: Profile, sockets: str, seed: int = 0, own_sockets_only: bool = False
) -> st.SearchStrategy[Plan]:
    """Plans for one lesson's profile: a topology, a swarm of its faults, the decode's socket
    options (`sockets` first, so a counterexample shrinks to it; only `sockets` with
    `own_sockets_only`), then the steps."""
    # Mostly one decode and one prefill (several requests then share one cache key), sometimes more.
    prefill = st.sampled_from([(1, 1), (1, 1), (2, 1), (1, 2), (2, 2)])
    topology = st.tuples(st.sampled_from([1, 1, 2]), st.sampled_from([1, 1, 2]).flatmap(
        lambda n: st.lists(prefill, min_size=n, max_size=n)))  # fmt: skip
    # Each fault kind is on with probability ON, independently (swarm testing). The coins come
    # from one drawn seed: Hypothesis's own draws favour "all off" (its simplest value) in most runs.
    swarm = st.integers(0, 2**32 - 1).map(lambda coin: _swarm(profile, coin))
    others = () if own_sockets_only else tuple(s for s in SOCKETS if s != sockets)
    sockets_drawn = st.sampled_from([sockets, *others])

    def with_steps(shape: tuple[tuple[int, list[tuple[int, int]]], set[str], str]) -> st.SearchStrategy[Plan]:
        (managers, prefills), faults, sockets = shape
        kinds = [kind for kind, weight in WORKLOAD.items() for _ in range(weight)]
        kinds += [fault for fault in sorted(faults) for _ in range(profile.weight)]
        step = st.tuples(st.sampled_from(kinds), st.integers(0, 7), st.integers(0, 7))
        return st.lists(step, min_size=profile.steps // 3, max_size=profile.steps).map(
            lambda steps: Plan(seed, managers, prefills, sockets, sorted(faults), steps)
        )

    return st.tuples(topology, swarm, sockets_drawn).flatmap(with_steps)


def _swarm(profile: Profile, coin: int) -> set[str]:
    draw = random.Random(coin)
    return {fault for fault in profile.faults if draw.random() < ON} | set(profile.always)
