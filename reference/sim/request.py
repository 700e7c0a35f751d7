"""One request of a simulation run, as the scheduler and the invariants follow it.

Its own module so that `cluster.py` (which drives it) and `notices.py` (whose invariants
read it) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    manager: int
    prefill: int
    room: int
    receiver: Any
    inited: bool = False
    sent: bool = False
    sent_at: float | None = None  # virtual time of send_metadata (the waiting timeout counts from it)
    send_returned_at: float | None = None  # ... and when it returned, unraised (it may block: slow_send)
    used: dict[str, list[Any]] = field(default_factory=dict)  # pool key -> the cached entries it used
    seen_failed: bool = False  # its status has read Failed while it was open
    aborted: bool = False
    opened_at: float = 0.0
    waiting_since: float | None = None  # first poll at which its prefill was gone (killed, stuck) since
    polled_at: float | None = None  # its last poll
    longest_gap: float = 0.0  # the longest the scheduler went without polling it (a stall: `timeout`)
    sent_seq: int | None = None  # how many Success statuses the decode inboxes had taken when it sent
    required: int = 1  # the prefill ranks whose Success it waits for (its manager's table, at its send)
