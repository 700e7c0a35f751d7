"""How the scheduler ends a failed request: `failure_exception()`, which clears it.

Upstream's mooncake receiver raises the `KVTransferError` (the scheduler catches it and
aborts the request); the reference receivers return it. Either way the request is over.
"""

from __future__ import annotations

import contextlib
from typing import Any


def end_with_failure(receiver: Any) -> None:
    with contextlib.suppress(Exception):  # upstream raises KVTransferError here
        receiver.failure_exception()
