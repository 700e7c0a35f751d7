"""The transfer status of one request (upstream `KVPoll`, base/conn.py).

The numeric order is load-bearing, as upstream: `update_status` keeps `max(old, new)`
for non-Failed writes, and the decode scheduler MIN-reduces polls across TP ranks so
that one failed rank fails them all. Failed is therefore the smallest value.
"""

from enum import IntEnum


class KVPoll(IntEnum):
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4
