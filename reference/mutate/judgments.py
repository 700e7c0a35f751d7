"""The hand-read verdict on every surviving mutant, keyed by `Mutant.key`: `equivalent`
with the argument why no execution can tell it from the unmutated variant, or `gap`
with the check that would catch it. `RESULTS.md` prints each with its diff.

The arguments lean on these facts of the shared code (reference/common/):
- only the heartbeat thread calls `_handle_node_failure` and `_on_heartbeat_success`, so
  no other locked section reads `addr_to_rooms_tracker` while it runs; `track_room` and
  mori's `_cleanup_room_tracking` (the concurrent mutators) take no lock at all;
- `connection_pool` is read and written under `connection_lock` by receivers'
  `_setup_bootstrap_infos`, `invalidate_cached_bootstrap_infos` and the heartbeat's
  `_forget_prefill_locked`; one `dict.get` or `dict.setdefault` is atomic under the GIL;
- the mock transport's `send` is one `deliver` under the network's lock;
- `poll()` returns a latched `conclude_state` before it reads anything else, and only
  `poll()` reaches `_check_waiting_timeout`;
- hooks are our instrumentation, not upstream code: a fired hook with no callback does
  nothing, and moving a statement across one only changes what a callback observes.
"""

from __future__ import annotations

EQ, GAP = "equivalent", "gap"

_BASE_INIT = (
    "the base class's `__init__` never reads or writes the attribute (it starts nothing: "
    "`start()` is a separate call), so the order of the two statements is unobservable"
)
_DONE_CALLBACK = (
    "the done callback can run only once the task has finished, which needs the event loop, and "
    "nothing between the two statements yields to it: the set holds the task before the callback "
    "can run either way"
)
_HOOK_ORDER = (
    "only the order of a statement and a hook point changes; a hook with no callback does nothing, "
    "and the one the live-set-race story installs (a concurrent discard) cannot affect the snapshot "
    "the loop iterates"
)
_POOL_RACE = (
    "`_forget_prefill_locked` then iterates and deletes `connection_pool` keys without the lock, "
    "while a receiver's locked `setdefault` can insert one (RuntimeError: dictionary changed size "
    "during iteration, in the heartbeat thread). Caught by a DPOR exploration of a node failure "
    "against a concurrent `_setup_bootstrap_infos` (not in the default run at this commit)"
)
_TRACKER_POP_UNLOCKED = (
    "the tracker's snapshot and pop leave the lock (or move to a second section); no other thread "
    "takes `connection_lock` to touch `addr_to_rooms_tracker` (only the heartbeat thread does, and it "
    "is the one running this), and its lock-free mutators (`track_room`, mori's cleanup) race with "
    "the snapshot identically with or without it"
)
_DISCONNECT = (
    "nothing in the run reads which endpoints were disconnected. A check that, after a prefill's "
    "failure, every endpoint of its cached generations is in the mock network's `disconnected` list "
    "(and no socket to it stays cached)"
)
_DISCONNECT_ORDER = (
    "whether the stale sockets are dropped before or after the rooms are failed: the mock network "
    "delivers by endpoint, not by socket object, so a send on the old socket or on a new one behaves "
    "the same, and `disconnected` ends the same"
)
_INDEPENDENT = "the two statements touch disjoint state (no shared attribute, no call that reads the other's)"
_ATOMIC_GET = (
    "the lock guards one `connection_pool.get(key)`, atomic under the GIL; a read inside another "
    "thread's critical section sees, for that key, either its value before or after that section "
    "(none of them writes a key twice), which a locked read can also see"
)
_INVALIDATE_RACE = (
    "the check-then-delete `pool.get(key) is infos` / `del pool[key]` runs without the lock: a "
    "concurrent receiver's `setdefault` can adopt the generation being invalidated between the two "
    "(it then sends to the dead ports), and the heartbeat's `_forget_prefill_locked` can iterate the "
    "pool during the `del`. Caught by a DPOR exploration of two receivers' setup/invalidate (not in "
    "the default run at this commit)"
)
_SETDEFAULT_RACE = (
    "`setdefault` runs unlocked, so it can fall between another receiver's locked `get(key) is infos` "
    "and `del pool[key]` and adopt the generation being invalidated (a request then sent to dead "
    "ports). Caught by a DPOR exploration of two receivers' setup/invalidate (not in the default run "
    "at this commit)"
)
_SOCK_LOCK = (
    "the mock transport's `send` is one locked `deliver`, so two unlocked senders on one socket "
    "cannot interleave there; on the loopback transport a pyzmq socket used by two threads at once "
    "is undefined behaviour. A mock `PushSocket.send` that asserts its `lock` is held by the caller"
)
_IS_EQ = (
    "equality and identity differ only for two equal but distinct generations of one key: receiver "
    "A's entry invalidated by a third party, B fetching the same (unchanged) route and installing an "
    "equal list, then A failing and, with `==`, deleting B's live entry (one extra `/route` fetch for "
    "the next request). A stale-bootstrap check in that order that counts `/route` fetches"
)
_ENTRIES_CLEAR = (
    "after an invalidation the kept entries refer only to lists already gone from the pool, which "
    "can never return to it (a new fetch builds a new list; only this receiver's setup installs its "
    "own), so every later `is` test on them is False and deletes nothing"
)
_ENTRY_BEFORE_REGISTER = (
    "the generation recorded before registration is not yet in the pool (`setdefault` installs it "
    "after a successful registration and the record is then overwritten), so on the only path that "
    "reads it (registration failed -> invalidate) `pool.get(key) is infos` is False either way"
)
_FETCH_FAILS = (
    "no lesson's run on fixed has a `/route` fetch fail at `init()` (restart-recovery, the lesson "
    "that does, is `bug` on fixed before this code runs). A check: `/route` fails at init -> the "
    "request is Failed at once, reason 'Failed to fetch bootstrap info'"
)
_REGISTER_FAILS = (
    "no run has registration with a prefill rank fail. A check: connect or send of the registration "
    "raises TransportError -> the request is Failed at once with the registration reason "
    "(tests/test_component_contract.py has it; the --impl run does not)"
)
_SEND_WITHOUT_INIT = (
    "no run calls `send_metadata` after a failed or missing `init()`. A check: `send_metadata` "
    "without bootstrap info -> the request is Failed with reason 'send_metadata without bootstrap "
    "info (init failed)' (tests/test_component_contract.py has it; the --impl run does not)"
)
_TIMEOUT_REASON = (
    "the stale-bootstrap story reads only `poll()` of the request that times out. A check of its "
    "failure reason ('Request timed out after 300 s ...', via `failure_exception()`) "
    "(tests/test_component_contract.py has it; the --impl run does not)"
)
_TIMEOUT_STATUS = (
    "`poll()` still returns the latched Failed, but `request_status` stays WaitingForInput. A check "
    "that the manager's status is Failed after the waiting timeout"
)
_TIMEOUT_ABORT = (
    "no check reads what the prefill receives. A check that a timed-out room's prefill ranks get an "
    "Abort frame"
)
_TIMEOUT_LATCH = (
    "the next poll re-reads the status table (Failed, so it returns Failed too), but a late transfer "
    "Success lifts Failed to Success there (`max`), and a `clear()` makes the next poll raise KeyError. "
    "A check polling a timed-out request again after a late Success (or after `clear()`)"
)
_TIMEOUT_RECORD_EARLY = (
    "every poll while waiting records a timeout failure for a request that has not timed out. A "
    "check that a waiting (later successful) request has no failure record"
)
_INIT_TIME_EARLY = (
    "`init_time` is set before the sends instead of after: on failure `conclude_state` is latched "
    "first, so it is never read; on success it is earlier by the duration of the sends, zero on the "
    "virtual clock. Only a clock that advances during `send` and a poll exactly at the timeout tell "
    "them apart. A check with a transport whose `send` advances the virtual clock"
)

JUDGMENTS: dict[str, tuple[str, str]] = {
    # fixed/bootstrap_server.py, fixed/dispatcher.py
    "73b262b74a": (EQ, _BASE_INIT),
    "f8575c1aac": (EQ, _BASE_INIT),
    "ecf8d32701": (EQ, _DONE_CALLBACK),
    "45f86994a0": (EQ, _DONE_CALLBACK),
    # fixed/manager.py
    "c8e6ac8e70": (GAP, _POOL_RACE),
    "def22d68ea": (GAP, _POOL_RACE),
    "8951e36811": (GAP, _POOL_RACE),
    "6d365a255c": (EQ, _TRACKER_POP_UNLOCKED),
    "c9604f1b7e": (EQ, _TRACKER_POP_UNLOCKED),
    "08f482439a": (EQ, _TRACKER_POP_UNLOCKED),
    "01eefcb0fd": (EQ, _TRACKER_POP_UNLOCKED + "; `addr = failed_bootstrap_addr` is a local"),
    "35960e1367": (EQ, _INDEPENDENT + ": the pool and info table vs the tracker, both under the lock"),
    "3d06d0b2b1": (GAP, _DISCONNECT),
    "3309cd5d20": (EQ, _DISCONNECT_ORDER),
    "d78aeba7b0": (EQ, _HOOK_ORDER),
    # fixed/receiver.py
    "fe0edde94c": (GAP, _INVALIDATE_RACE),
    "c6d0a7dcb2": (GAP, _INVALIDATE_RACE),
    "fa1bf1ee31": (EQ, _ATOMIC_GET),
    "7d19e946a9": (EQ, _ATOMIC_GET + "; the lock now covers only a local assignment"),
    "7ae84bd862": (GAP, _SETDEFAULT_RACE),
    "f0b0831407": (GAP, _SETDEFAULT_RACE),
    "fd7f92da00": (GAP, _SOCK_LOCK),
    "361c3beb4d": (GAP, _SOCK_LOCK),
    "0242cd7d32": (GAP, _IS_EQ),
    "959ca47a18": (EQ, _ENTRIES_CLEAR),
    "724c6d2b34": (EQ, _ENTRIES_CLEAR),
    "ddb7541e34": (EQ, _ENTRY_BEFORE_REGISTER),
    "63bf3d203a": (EQ, _ENTRY_BEFORE_REGISTER),
    "2b021d6f76": (EQ, _ENTRY_BEFORE_REGISTER + "; after the swap it is recorded only on success"),
    "d4799be51d": (EQ, _INDEPENDENT),
    "f4dbaac437": (EQ, _INDEPENDENT),
    "f651c3acd4": (
        EQ,
        "on the failure path `bootstrap_infos` becomes None before `_fail_fetch` sets it to None; "
        "the `if` does not read it",
    ),
    "1bb504f019": (
        EQ,
        "`ReceiverBase.__init__` only sets fields and calls `track_room`, which never reaches the "
        "receiver, so `_connection_pool_entries` is not read before it exists",
    ),
    "71a955b4d9": (GAP, _FETCH_FAILS),
    "471edee420": (EQ, _INDEPENDENT + ": the failure record and status vs the pool"),
    "bf60726c7a": (GAP, _REGISTER_FAILS),
    "9da9f5334d": (GAP, _REGISTER_FAILS),
    "3f339b76c6": (GAP, _REGISTER_FAILS),
    "190cdb8dc6": (GAP, _SEND_WITHOUT_INIT),
    "80111aa222": (GAP, _SEND_WITHOUT_INIT),
    "ed20108eda": (GAP, _SEND_WITHOUT_INIT),
    "e49d584b5d": (GAP, _SEND_WITHOUT_INIT + "; here the mutant raises TypeError"),
    "0c36d33e23": (GAP, _INIT_TIME_EARLY),
    "71b4b76b79": (EQ, _INDEPENDENT + ": the pool vs the failure record and `conclude_state`"),
    "f8d8715a63": (GAP, _TIMEOUT_REASON),
    "2bad7a576b": (GAP, _TIMEOUT_STATUS),
    "68bcba34e3": (GAP, _TIMEOUT_ABORT),
    "5ec1c5360a": (GAP, _TIMEOUT_LATCH),
    "533cb2caad": (GAP, _TIMEOUT_LATCH),
    "237451f38e": (GAP, _TIMEOUT_RECORD_EARLY),
    "4aa31ac32e": (
        EQ,
        "the failure record and the Failed status are written by the polling thread, and the record "
        "is read only by `failure_exception()`, which that same thread calls after `poll()` returns",
    ),
    "33dee3dd47": (EQ, _INDEPENDENT + ": the status table vs the pool"),
    "ba4dfc82e6": (EQ, _INDEPENDENT + ": the pool vs the abort frames sent to the receiver's own infos"),
    "b8e0b1dfcd": (
        EQ,
        _INDEPENDENT + ": `_send_abort_once` reads `abort_notified` and `bootstrap_infos` only",
    ),
}
