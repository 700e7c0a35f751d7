"""How much each benchmark does in the full run and in the CI smoke run.

The smoke mode runs the same code paths with tiny sizes so that CI checks, in well
under a minute, that every benchmark still runs and writes well-formed results. Its
numbers mean nothing; only the full run's are committed and quoted.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.transport.sockets import FAIL_FAST, UPSTREAM, SocketOptions


@dataclass(frozen=True)
class Mode:
    name: str
    rounds: int  # timed rounds per micro benchmark (each round is a batch of ops)
    batch: int  # operations per round for the nanosecond-scale operations
    task_batch: int  # tasks spawned per round in the task-registration benchmark
    room_counts: tuple[int, ...]  # tracked rooms for the `_handle_node_failure` sweep
    failure_rounds: int  # rounds for the `_handle_node_failure` sweep at 100,000 rooms
    thread_counts: tuple[int, ...]  # cache-hit threads in the contention benchmark
    contention_hits: int  # cache hits per thread per round
    setup_rounds: int  # whole loopback receiver set-ups timed
    detection_intervals: tuple[float, ...]  # heartbeat intervals (s) swept
    detection_failures: tuple[int, ...]  # heartbeat max failures swept
    detection_repeats: int
    recovery_repeats: int
    recovery_receivers: int
    recovery_rate: float  # requests per second per receiver
    recovery_before: float  # seconds of stream before the restart
    recovery_horizon: float  # seconds of stream after the restart
    recovery_sockets: tuple[SocketOptions, ...]  # decode PUSH-socket options swept (upstream's first)


FULL = Mode(
    name="full",
    rounds=400,
    batch=5_000,
    task_batch=500,
    room_counts=(10, 1_000, 100_000),
    failure_rounds=15,
    thread_counts=(1, 2, 8),
    contention_hits=5_000,
    setup_rounds=30,
    detection_intervals=(0.02, 0.05, 0.1),
    detection_failures=(1, 2, 3),
    detection_repeats=7,
    recovery_repeats=5,
    recovery_receivers=4,
    recovery_rate=20.0,
    recovery_before=1.0,
    recovery_horizon=6.0,  # a restart took 2.4 to 6.6 s to register under load 13 here
    recovery_sockets=(UPSTREAM, FAIL_FAST.with_send_timeout(0.1)),
)

SMOKE = Mode(
    name="smoke",
    rounds=3,
    batch=200,
    task_batch=50,
    room_counts=(10, 1_000, 100_000),
    failure_rounds=1,
    thread_counts=(1, 2),
    contention_hits=200,
    setup_rounds=3,
    detection_intervals=(0.02,),
    detection_failures=(2,),
    detection_repeats=2,
    recovery_repeats=1,
    recovery_receivers=2,
    recovery_rate=20.0,
    recovery_before=0.4,
    recovery_horizon=1.5,
    recovery_sockets=(UPSTREAM,),
)

MODES = {mode.name: mode for mode in (FULL, SMOKE)}
