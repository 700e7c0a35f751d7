"""What PR #33048 leaves open: a background loop that raises is silently gone.

The reviewer's concern upstream: the fix holds each loop in a set until it is done,
and `add_done_callback(set.discard)` drops it the moment it finishes, with or without
an exception. Nothing retrieves that exception. The dispatcher is not told, `/health`
still says every rank is fine, and no one restarts the loop. The only trace is the
loop's "Task exception was never retrieved" log line, written when the dropped task
object is freed. The buggy form loses the exception the same way; the fix does not
change that. We show it, not fix it: it is the lead-in to a hardened form.

The demonstration breaks the stale-mapping sweep (a stand-in for any bug in a loop
body), lets its first round run, then checks whether anyone noticed and whether
mappings whose `/send` never came are still evicted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import ModuleType

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.config import DispatcherConfig
from reference.harness.loop_capture import UNRETRIEVED, loop_errors
from reference.transport.dp_mock import MockWorkerPool

CONFIG = DispatcherConfig()
KEPT = 3  # encodes whose /send never comes


@dataclass(frozen=True)
class Swallowed:
    held_before: int  # tasks the dispatcher held (0 for a form that holds none)
    held_after: int
    loops_alive: list[str]
    healthy: bool  # what /health reports
    stale_left: int  # mappings older than the ttl still there after two sweep periods
    logged: list[str]  # "Task exception was never retrieved" reports, the only trace

    @property
    def symptom(self) -> str:
        return (
            f"the sweep loop raised and was dropped (tasks held {self.held_before} -> {self.held_after}, "
            f"loops left: {', '.join(self.loops_alive)}); "
            f"/health still {'OK' if self.healthy else 'failing'}; "
            f"{self.stale_left} mappings past their {CONFIG.send_timeout:g} s ttl never evicted; only trace: "
            f"{'; '.join(self.logged) or 'none'}"
        )


def _broken_sweep() -> int:
    raise RuntimeError("sweep hit a malformed mapping")


async def _demo(variant: ModuleType, loop: JumpLoop) -> Swallowed:
    pool = MockWorkerPool(2)
    await pool.start()
    dispatcher = variant.DPDispatcher(pool, CONFIG)
    dispatcher.sweep_stale_mappings = _broken_sweep  # type: ignore[method-assign]
    with loop_errors(loop) as errors:
        try:
            dispatcher.start()
            await loop.settle()
            held_before = len(getattr(dispatcher, "background_tasks", ()))
            await asyncio.gather(*(dispatcher.dispatch(f"kept-{i}") for i in range(KEPT)))
            for _ in range(2):
                await loop.advance(max(CONFIG.cleanup_interval, CONFIG.send_timeout))
            held_after = len(getattr(dispatcher, "background_tasks", ()))
            loops_alive = sorted(dispatcher.loop_tasks())
            healthy, stale_left = dispatcher.all_ranks_alive(), len(dispatcher.req_id_to_rank)
        finally:
            await dispatcher.close()
            await pool.close()
    logged = [f"{r.message} ({r.coroutine}: {r.exception})" for r in errors.about(UNRETRIEVED)]
    return Swallowed(held_before, held_after, loops_alive, healthy, stale_left, logged)


def demonstrate(variant: ModuleType) -> Swallowed:
    return run_on_jump_loop(lambda loop: _demo(variant, loop))
