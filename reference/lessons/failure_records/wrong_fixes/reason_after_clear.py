"""Wrong fix: `clear()` drops the record, and `failure_exception()` still clears first.

Tempting: the base `failure_exception()` (clear, then read the reason) is upstream's
order and was never wrong before; the leak fix is in `clear()`, so nothing else needs
to change. Wrong: `clear()` now pops the very record `failure_exception()` reads next:
every failed request's exception says "Failed due to an unknown reason" instead of
its abort, timeout or lost prefill. Bounded, but the reason is gone. Breaks hardened
item 3 (`failure_exception()` takes the reason before it clears).
"""

import reference.hardened
from reference.common.receiver import ReceiverBase
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    failure_exception = ReceiverBase.failure_exception  # clear, then read: the record is gone
