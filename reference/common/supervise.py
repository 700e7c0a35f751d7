"""Background loops that never vanish silently: log the traceback, back off, restart.

Used by the hardened variant (lesson `supervised-loops`); shared code lives here.

Upstream's background loops (the DP dispatcher's three, the bootstrap server's cleanup)
are plain tasks: one that raises is gone, and all that is left is "Task exception was
never retrieved" when the task is collected, while the component goes on without it.
`supervised(body, restarts)` runs `body()` (a loop coroutine function) and, whenever it
raises, logs the exception with its traceback, counts the restart under the loop's
name, waits a back-off (0.1 s doubling to 5 s, on the loop's clock, so a loop that
fails at once cannot spin) and runs it again. Cancellation (shutdown) passes through,
and a body that returns normally (e.g. the listener giving up by design) is not
restarted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("reference.supervise")
FIRST_BACKOFF, MAX_BACKOFF = 0.1, 5.0


async def supervised(body: Callable[[], Awaitable[None]], restarts: dict[str, int]) -> None:
    name = getattr(body, "__name__", repr(body))
    backoff = FIRST_BACKOFF
    while True:
        try:
            await body()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            restarts[name] = restarts.get(name, 0) + 1
            log.exception("background loop %s raised; restarting it in %.1f s", name, backoff)
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF)
