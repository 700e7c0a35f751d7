"""Wrong fix: a cleared room records nothing more, but `clear()` keeps the record it had.

Tempting: `failure_exception()` pops the reason when the scheduler turns a failed
request into its exception, so the record "is always consumed", and `clear()` need not
touch `failure_records`. Wrong: not every failed request goes through
`failure_exception()`: one aborted and cleared by the scheduler directly (or whose
exception is never built) keeps its record for ever, one per such request. Breaks
hardened item 2 (`clear()` drops the room's failure record).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def clear(self, bootstrap_room: int) -> None:
        with self.failure_lock:
            kept = self.failure_records.get(bootstrap_room)
        super().clear(bootstrap_room)
        if kept is not None:
            with self.failure_lock:
                self.failure_records[bootstrap_room] = kept  # the mistake: the record outlives the room
