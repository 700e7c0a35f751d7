"""Wrong fix: `clear()` drops the room's record, but `record_failure` records for any room.

Tempting: with `clear()` popping the failure record, every record is "cleaned up
eventually", and a guard in `record_failure` looks like a second fix for the same leak.
Wrong: the late abort comes *after* `clear()`: it records its reason for a room that
no request will ever clear again, one entry per late abort for as long as the decode
runs. Breaks hardened item 1 (nothing is recorded for a cleared room).
"""

import reference.hardened
from reference.common.manager import ManagerBase
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    record_failure = ManagerBase.record_failure  # unconditional, as upstream
