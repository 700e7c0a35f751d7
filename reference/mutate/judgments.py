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

# -- hardened -------------------------------------------------------------------------
_FIELDS = "two independent field initialisations: neither reads the other, and nothing runs between them"
_ATOMIC_POP = (
    "the lock guards one `failure_records.pop(room, ...)`, atomic under the GIL; the other sections "
    "under `failure_lock` (`record_failure`'s check of `request_status` then its store, the pops in "
    "`clear` and `_open_lifecycle`) read nothing the pop changes before their own store, so a pop "
    "inside one of them equals a pop just before it"
)
_RECORD_RACE = (
    "`record_failure`'s check (`room in request_status`) and store are no longer atomic with "
    "`clear`'s pop of the record: a late abort that passed the check before `clear` popped "
    "`request_status` stores its record after `clear` popped the record, which then stays for a "
    "cleared room (the failure-records claim). A DPOR exploration of a late `abort()` against "
    "`clear()` (not in the default run at this commit)"
)
_CLEAR_VS_FAILURE = (
    "`rooms.discard` in `clear` runs without `connection_lock`, concurrently with the heartbeat's "
    "locked `list(rooms)` snapshot (RuntimeError: Set changed size during iteration in the "
    "heartbeat thread, the live-set-race symptom). A DPOR exploration of `clear()` against a node "
    "failure (not in the default run at this commit)"
)
_CLEAR_SPLIT = (
    "the address pop and the tracker lookup are no longer one locked step: between them a failure "
    "can pop the prefill's set and a new request reusing the room id re-track it in a new set, "
    "from which the old request's `clear` then discards it (the new request is then failed by no "
    "later node failure: the stale-tracker claim). A DPOR exploration of `clear()` against a node "
    "failure plus a re-registration and room reuse (not in the default run at this commit)"
)
_DETACHED_DISCARD = (
    "the discard moves to a second locked section; if a failure popped the set in between, the "
    "discard hits a detached set nobody reads (the failure's own snapshot already holds the room, "
    "and `_fail_lost_room` skips it: `clear` popped `request_status` first); otherwise it is the "
    "same discard"
)
_CLEANUP_LOCKS = (
    "`_cleanup_room_tracking`'s two locked steps (take the address and the set; discard from it "
    "only if it is still the tracked one, pop it if empty) are what the stale-tracker hardening "
    "adds; the lesson's story drives the race with a hook between them, sequentially, so it cannot "
    "see a check-then-act split by another thread. The exploration `late-cleanup-keeps-new-set` "
    "(`reference/explore/stale_tracker.py`: the cleanup against a node failure and a "
    "re-registration, in the default run) kills the split that checks the set outside the lock; "
    "a set read outside the first step is still checked for identity inside the second, so it can "
    "only pop a new set "
    "that is empty, which needs a re-registration that installs its set before adding its room "
    "(the exploration installs it with the room in it)"
)
_IS_NOT_SET = (
    "`!=` compares the sets' contents: a re-registered prefill's new set with the same rooms (a "
    "reused room id re-tracked) passes as 'ours', and the cleanup then discards from the old set "
    "and pops the new one (the stale-tracker bug). A stale-tracker check whose re-registered "
    "prefill tracks the same room id again"
)
_PEER_GONE_LOCK = (
    "`_on_peer_gone` deletes pool entries without the lock, against receivers' locked "
    "check-then-delete in `invalidate_cached_bootstrap_infos` (a KeyError there when it falls "
    "between their `get` and `del`) and their locked `setdefault`. A DPOR exploration of a peer "
    "loss against a receiver's invalidation (not in the default run at this commit)"
)
_PEER_GONE_ORDER = (
    "receivers are marked `lost_peer` before the dead generations leave the pool: one polling in "
    "between resends through the still-cached dead generation. A DPOR exploration of a peer loss "
    "against a receiver's poll (not in the default run at this commit)"
)
_HEARTBEAT_PROBE = (
    "the supervised-loops lesson drives only the DP dispatcher; no run makes a heartbeat probe "
    "raise on hardened's manager. A check whose transport's `health` raises once: the heartbeat "
    "goes on, `heartbeat_errors` names the error and the traceback is logged"
)
_STATE_BOUND = (
    "a table entry of a cleared room is left behind, which no check of hardened's manager counts "
    "(failure-records counts `failure_records` only). A whole-state bound over the manager's "
    "tables after open/clear cycles (the simulation's object-graph bound)"
)
_FAILURE_RECORD_CLEAR = (
    "a record made while the room was open survives `clear()` (failure-records' story only makes "
    "late records, which `record_failure` refuses). A failure-records check that fails an open "
    "request, clears it without `failure_exception()` and counts `failure_records`"
)
_REASON_HARDENED = (
    "no run on hardened reads a failure reason (`failure_exception()` is never called). A check "
    "that a failed request's `failure_exception()` carries its reason"
)
_REUSE_NO_CLEAR = (
    "room-reuse's story clears the previous request before reusing its id, so `clear` already "
    "removed what `_open_lifecycle` removes again. A room-reuse check that reopens a room id whose "
    "previous request was never cleared (its record, responses and transfer expectation must not "
    "carry over)"
)
_OPEN_ORDER = (
    "`request_status` gets the new request's Bootstrapping before `room_lifecycle` names it: a late "
    "abort of the previous request that checks `owns()` in between passes and fails the new "
    "request. A DPOR exploration of a room reopened against the previous request's late abort (not "
    "in the default run at this commit)"
)
_ORDER_CLEAR = (
    "the pops of one room's entries in `clear` in another order: each reader treats a room missing "
    "from its own table as finished (`accepts_transfer_status` needs both `awaiting_transfer` and "
    "`request_status`, `record_failure` needs `request_status`, `owns` needs `room_lifecycle`, "
    "`_on_peer_gone` only flags the receiver being cleared, which never polls again), and no reader "
    "combines two of them"
)
_ABSENT_RETURNS = (
    "both branches for an absent room return without writing anything, so the inner `if` (and a "
    "`return` put before it) changes nothing"
)
_WEAK_RECEIVERS = (
    "the only difference is that a receiver nobody references any more drops out of `receivers` "
    "before its `clear()`: nobody can poll it, and `_on_peer_gone` (the only reader) would only set "
    "a flag on it. Behaviour is the same; only `len(mgr.receivers)` differs, downwards"
)
_INIT_ORDER_HARDENED = (
    "`ManagerBase.__init__` (or `ReceiverBase.__init__`, via `track_room` and `_open_lifecycle`) "
    "touches only the manager's tables, never the attribute initialised next to it"
)
_ALWAYS_SET_FIRST = (
    "every read of the field follows a write on every path: `_wait_for_prefill` and "
    "`_resend_after_peer_loss` set `_retry_ceiling` and `_next_fetch` before `_retry_due` can read "
    "them (it runs only once `_prefill_missing_since` is set, by those two); `_sent_indices` is read "
    "only after a peer loss flagged this receiver, which needs `init_time`, which `send_metadata` "
    "sets right before `_sent_indices`"
)
_WAIT = (
    "no run on hardened has a `/route` fetch fail while its prefill restarts (restart-recovery's "
    "story registers the new prefill before the next request asks). A restart-recovery check whose "
    "request asks while the prefill is down and must succeed once it registers, within the waiting "
    "timeout"
)
_WAIT_GIVE_UP = (
    "no run waits for a prefill past the waiting timeout. A check whose prefill never comes back: "
    "the request ends Failed after `waiting_timeout` with the fetch/send reason"
)
_BACKOFF = (
    "the retry back-off (doubling ceiling, jitter) is checked by tests/test_residual_lessons.py, not "
    "by the --impl run. A restart-recovery check counting `/route` fetches while a request waits"
)
_DEFER = (
    "no run calls `send_metadata` while the prefill is missing. A restart-recovery check that sends "
    "metadata while waiting for the prefill: it is held, then sent once the prefill answers"
)
_RESEND = (
    "no run has a prefill rank die after a request sent its metadata (restart-recovery's story "
    "kills the prefill between requests). A restart-recovery check where the prefill dies with a "
    "request waiting for its KV: the request resends to the successor and succeeds"
)
_RESEND_UNDECIDED = (
    _RESEND + "; that check would also decide whether this reordering inside the resend path is observable"
)
_MULTI_CP = (
    "with one CP rank (every scenario) the receiver holds no other cached generation at this point "
    "and `bootstrap_infos` is still None; with several, earlier CP ranks' generations stay cached "
    "(or `bootstrap_infos` holds them, so `poll` takes the setup as done). A check with "
    "prefill `attn_cp_size` 2 whose second CP rank's route is missing"
)
_ADOPTED = (
    "the generation recorded is this receiver's own fetched list, not the winner `setdefault` "
    "adopted, so a failure no longer invalidates the generation it used; on hardened the mock "
    "network's peer-loss notice (`_on_peer_gone`) drops that generation anyway in every scenario. A "
    "stale-bootstrap check with two receivers racing to install one key and the loser failing "
    "while its peer stays registered (no peer-loss notice)"
)
_TIMEOUT_HARDENED = (
    "on hardened no request reaches the waiting timeout in any run (peer-loss notices end the "
    "stale-bootstrap story's wait early). A check whose prefill never answers: after "
    "`waiting_timeout` the request is Failed in the status table, with the timeout reason, its "
    "generation invalidated and an Abort sent"
)
_ABORT_HARDENED = (
    "room-reuse's story aborts only a stale request. A check that aborting an open request on "
    "hardened leaves the manager's status Failed with the abort reason, and that a stale request's "
    "poll after its abort returns Failed, not the new request's status"
)
_FAILURE_EXC = (
    "no run on hardened calls `failure_exception()`. A check that a failed request's "
    "`failure_exception()` returns its reason and that a poll afterwards stays Failed"
)
_SEND_WITHOUT_INIT_HARDENED = _SEND_WITHOUT_INIT.replace(
    " (tests/test_component_contract.py has it; the --impl run does not)", ""
)
_SEND_AFTER_FAILED_INIT = (
    "`expect_transfer` now marks a request whose init failed as awaiting transfers, so late "
    "transfer statuses for it are counted in `prefill_response_tracker` (its status, Failed, is "
    "terminal). " + _SEND_WITHOUT_INIT_HARDENED + ", and that its room is never in `awaiting_transfer`"
)
_JUST_SENT = (
    "both are written by the thread that sends, before it returns, and read only by that thread's "
    "later polls (`_on_peer_gone` in another thread reads `init_time` through `sent_to`, and sets "
    "only a flag the next poll acts on, after both writes)"
)

_TRACKER_POP_HARDENED = (
    "the tracker's pop leaves the locked step of the snapshot; on hardened, `clear` and the cleanup "
    "take `connection_lock` to touch the tracker, so one can now run between the snapshot and the "
    "pop: a cleanup that empties and pops the old set, a `track_room` that creates a new one, then "
    "the failure's pop removes the new set (its room is failed by no later failure: the "
    "stale-tracker claim). A DPOR exploration of a node failure against hardened's cleanup and a "
    "new request (not in the default run at this commit)"
)
_FORGET_SPLIT_HARDENED = (
    "forgetting the prefill and taking the snapshot become two locked steps; `clear` and the "
    "cleanup, which may now run between them, touch neither the pool nor the info table that the "
    "first step changed, so that order equals running them just before the whole section"
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
    # hardened
    "87453de2b7": (EQ, _BASE_INIT),
    "63105bac18": (EQ, _BASE_INIT),
    "01ef40b9ba": (EQ, _FIELDS),
    "0eca973636": (EQ, _FIELDS),
    "22cf18de6e": (EQ, _FIELDS),
    "124827cef3": (EQ, _FIELDS),
    "3e6cccb923": (EQ, _FIELDS),
    "fcf3730ee0": (EQ, _FIELDS),
    "9cdc511def": (EQ, _FIELDS),
    "eb3dc9fa84": (EQ, _FIELDS),
    "d82413a391": (EQ, _FIELDS),
    "5d1492d2c9": (EQ, _FIELDS),
    "71397a5884": (EQ, _FIELDS),
    "9923fd19f2": (EQ, _FIELDS),
    "72b235909a": (EQ, _FIELDS),
    "52b9d04ab9": (EQ, _DONE_CALLBACK),
    "e893c36c06": (EQ, _DONE_CALLBACK),
    "5d9c7cb565": (EQ, _ATOMIC_POP),
    "570a6f063c": (EQ, _ATOMIC_POP),
    "223ef12ce9": (EQ, _ATOMIC_POP),
    "b93173e184": (GAP, _RECORD_RACE),
    "aca3313c30": (GAP, _RECORD_RACE),
    "cd9cb9cdbc": (GAP, _RECORD_RACE),
    "53fffd5d04": (GAP, _RECORD_RACE),
    "3928a65c8a": (GAP, _CLEAR_VS_FAILURE),
    "389830c688": (GAP, _CLEAR_VS_FAILURE),
    "9562a4af31": (GAP, _CLEAR_VS_FAILURE),
    "0bd15005a2": (GAP, _CLEAR_SPLIT),
    "cc14ce08ad": (GAP, _CLEAR_SPLIT),
    "fe6ff800db": (EQ, _DETACHED_DISCARD),
    "5a70b56894": (GAP, _CLEANUP_LOCKS),
    "afddbdd790": (GAP, _CLEANUP_LOCKS),
    "fd4719cb3a": (GAP, _CLEANUP_LOCKS),
    "226c115cfe": (GAP, _CLEANUP_LOCKS),
    "2b4bb214e3": (GAP, _CLEANUP_LOCKS),
    "fde4a1c21b": (GAP, _CLEANUP_LOCKS),
    "4661eee95d": (GAP, _CLEANUP_LOCKS),
    "a28ca0ca53": (GAP, _CLEANUP_LOCKS),
    "75e6d83dd1": (GAP, _CLEANUP_LOCKS),
    "74678befc5": (GAP, _CLEANUP_LOCKS),
    "8abf476ce2": (GAP, _IS_NOT_SET),
    "c8301e1287": (GAP, _PEER_GONE_LOCK),
    "20499aa961": (GAP, _PEER_GONE_LOCK),
    "11457ba3bf": (GAP, _PEER_GONE_ORDER),
    "3c392376e7": (GAP, _POOL_RACE),
    "a543610285": (GAP, _POOL_RACE),
    "17a34fa0f0": (GAP, _POOL_RACE),
    "facf378b25": (GAP, _TRACKER_POP_HARDENED),
    "c98789722b": (EQ, _FORGET_SPLIT_HARDENED),
    "19274b4255": (GAP, _TRACKER_POP_HARDENED),
    "0742dc8a35": (GAP, _TRACKER_POP_HARDENED),
    "9d684d3128": (GAP, _DISCONNECT),
    "95e4882de8": (EQ, _HOOK_ORDER),
    "8d6c16c552": (GAP, _HEARTBEAT_PROBE),
    "86149c858f": (GAP, _HEARTBEAT_PROBE),
    "0ce720a328": (GAP, _HEARTBEAT_PROBE),
    "66782e3b92": (GAP, _HEARTBEAT_PROBE),
    "cfcd02aa44": (GAP, _HEARTBEAT_PROBE),
    "c09e99d425": (GAP, _STATE_BOUND),
    "c62d893821": (GAP, _STATE_BOUND),
    "a602f55d5e": (GAP, _STATE_BOUND),
    "377a0efa61": (GAP, _STATE_BOUND),
    "4c0a476ba9": (GAP, _STATE_BOUND),
    "97e54e35a2": (GAP, _STATE_BOUND),
    "a181e469f7": (GAP, _STATE_BOUND),
    "7d46a644f9": (GAP, _STATE_BOUND),
    "7464405735": (GAP, _STATE_BOUND),
    "89a4c339a9": (GAP, _STATE_BOUND),
    "e060bc2ee9": (GAP, _STATE_BOUND),
    "479a9e36b3": (GAP, _STATE_BOUND),
    "d8427b72cd": (GAP, _STATE_BOUND),
    "fefb95b0ff": (GAP, _STATE_BOUND),
    "366006549c": (GAP, _STATE_BOUND),
    "96c6c21423": (GAP, _STATE_BOUND),
    "fe2e58b403": (GAP, _STATE_BOUND),
    "303b7cba39": (GAP, _FAILURE_RECORD_CLEAR),
    "e4e0d29562": (GAP, _FAILURE_RECORD_CLEAR),
    "5feb7f1926": (GAP, _FAILURE_RECORD_CLEAR),
    "957b6bcb60": (GAP, _REASON_HARDENED),
    "ab71eacca2": (GAP, _REASON_HARDENED),
    "c858b15091": (GAP, _REASON_HARDENED),
    "58612cfc79": (GAP, _REASON_HARDENED),
    "3bf4e84a51": (GAP, _REASON_HARDENED),
    "491b4170a7": (GAP, _REUSE_NO_CLEAR),
    "9bd81d0a46": (GAP, _REUSE_NO_CLEAR),
    "35e9f7542f": (GAP, _REUSE_NO_CLEAR),
    "80763fc25c": (GAP, _REUSE_NO_CLEAR),
    "6c007d63fa": (GAP, _REUSE_NO_CLEAR),
    "202b092bad": (GAP, _OPEN_ORDER),
    "c6d6004611": (EQ, _ORDER_CLEAR),
    "3c38790d58": (EQ, _ORDER_CLEAR),
    "f9568e2878": (EQ, _ORDER_CLEAR),
    "db64986616": (EQ, _ORDER_CLEAR),
    "cce93a3042": (EQ, _ABSENT_RETURNS),
    "3aea30b1f3": (EQ, _ABSENT_RETURNS),
    "92a68d7b20": (EQ, _WEAK_RECEIVERS),
    "5e6c6b68c9": (EQ, _INIT_ORDER_HARDENED),
    "c81616f7ce": (EQ, _INIT_ORDER_HARDENED),
    "4c6f5e79e7": (GAP, _INVALIDATE_RACE),
    "205cadb7a2": (GAP, _INVALIDATE_RACE),
    "d5684126ff": (GAP, _SETDEFAULT_RACE),
    "1de4d38a7d": (GAP, _SETDEFAULT_RACE),
    "75bdabc429": (GAP, _SOCK_LOCK),
    "dbbe2b7944": (GAP, _SOCK_LOCK),
    "58f13dbf6f": (GAP, _IS_EQ),
    "cb7e15b679": (EQ, _ALWAYS_SET_FIRST),
    "7374d8dd9f": (EQ, _ALWAYS_SET_FIRST),
    "3cf122df54": (EQ, _ENTRIES_CLEAR),
    "0909fc3ed1": (EQ, _ENTRIES_CLEAR),
    "b66e514da3": (EQ, _ENTRY_BEFORE_REGISTER),
    "a005800637": (EQ, _ENTRY_BEFORE_REGISTER),
    "75fca25ecd": (EQ, _ENTRY_BEFORE_REGISTER),
    "556551cebd": (GAP, _ADOPTED),
    "8d63bde223": (GAP, _ADOPTED),
    "62d89dd0f4": (GAP, _ADOPTED),
    "6843dadea8": (GAP, _MULTI_CP),
    "8b87527b41": (GAP, _MULTI_CP),
    "602151cf87": (GAP, _MULTI_CP),
    "d3d943ede9": (GAP, _MULTI_CP),
    "630ffb34bf": (GAP, _MULTI_CP),
    "4bd23bdd18": (GAP, _MULTI_CP),
    "bc2de92500": (GAP, _MULTI_CP),
    "8d8db22743": (GAP, _MULTI_CP),
    "e4f31562f5": (GAP, _MULTI_CP),
    "79d8832a73": (GAP, _WAIT_GIVE_UP),
    "0e507b2cfe": (GAP, _WAIT_GIVE_UP),
    "b6c20454dc": (GAP, _WAIT_GIVE_UP),
    "f93f7291f0": (GAP, _WAIT_GIVE_UP),
    "9e8f33f67e": (GAP, _TIMEOUT_HARDENED),
    "fd759b8ba9": (GAP, _TIMEOUT_HARDENED),
    "32ea14f2f5": (GAP, _TIMEOUT_HARDENED),
    "e09136bb59": (GAP, _TIMEOUT_HARDENED),
    "3a7a8f0ded": (GAP, _TIMEOUT_HARDENED),
    "30bbb48b63": (GAP, _TIMEOUT_HARDENED),
    "1abe7c4b47": (GAP, _TIMEOUT_HARDENED),
    "5f17eb352a": (GAP, _TIMEOUT_HARDENED),
    "77acf98c50": (GAP, _TIMEOUT_HARDENED),
    "a7cb7143c2": (GAP, _RESEND),
    "e9450aee30": (GAP, _RESEND),
    "45ad5804bf": (GAP, _RESEND),
    "e8e4753f71": (GAP, _RESEND),
    "cea89f2b75": (GAP, _RESEND),
    "b003e3015c": (GAP, _RESEND),
    "73a7c1cd14": (GAP, _RESEND),
    "b6435b5be0": (GAP, _RESEND),
    "bb4527c86c": (GAP, _RESEND),
    "6c5ba7d770": (GAP, _RESEND),
    "38357884b1": (GAP, _RESEND),
    "d948dfd193": (GAP, _RESEND),
    "f4b988426d": (GAP, _RESEND),
    "e0fa0f9488": (GAP, _RESEND),
    "343a34116f": (GAP, _RESEND),
    "a6bdadea96": (GAP, _RESEND),
    "78f11da5c2": (GAP, _RESEND),
    "13f28d8707": (GAP, _RESEND),
    "59b4e39a28": (GAP, _RESEND),
    "d367995d8f": (GAP, _RESEND),
    "225d5fc785": (GAP, _RESEND),
    "3ddbaf9f25": (GAP, _RESEND),
    "f3112f258c": (GAP, _RESEND),
    "494af21075": (GAP, _RESEND),
    "b3ebdf8d23": (GAP, _RESEND),
    "e285d574ed": (GAP, _RESEND),
    "19ebcb1046": (GAP, _RESEND),
    "b4c04f0a64": (GAP, _RESEND),
    "d4187e4666": (GAP, _RESEND_UNDECIDED),
    "073e34a03f": (GAP, _RESEND_UNDECIDED),
    "df5d5a46d0": (GAP, _RESEND_UNDECIDED),
    "b7b4d177ad": (GAP, _WAIT),
    "62a553e9c9": (GAP, _WAIT),
    "2574997e10": (GAP, _WAIT),
    "6fe1c59d74": (GAP, _WAIT),
    "e7ac93dd8c": (GAP, _WAIT),
    "965ca0f4ea": (GAP, _WAIT),
    "da2611d6c2": (GAP, _WAIT),
    "fa759f630a": (GAP, _WAIT),
    "6356a17042": (GAP, _WAIT),
    "ac59a78e51": (GAP, _WAIT),
    "ce3c989d78": (GAP, _WAIT),
    "e4672044cb": (GAP, _WAIT),
    "9dfa2e5bff": (GAP, _WAIT),
    "ebe4b6627d": (GAP, _WAIT),
    "5fd68fcf02": (GAP, _WAIT),
    "344cde53fc": (GAP, _WAIT),
    "c989357dd4": (GAP, _BACKOFF),
    "0cf6b571f3": (GAP, _BACKOFF),
    "b2ea54b3ab": (GAP, _BACKOFF),
    "27ebf7f5be": (GAP, _BACKOFF),
    "af8ffc7984": (GAP, _BACKOFF),
    "d9c0a5c6f8": (GAP, _BACKOFF),
    "200d1a2ee1": (GAP, _BACKOFF),
    "8beb8c6ff5": (GAP, _DEFER),
    "74bf20266c": (GAP, _DEFER),
    "8562fb66ed": (GAP, _DEFER),
    "c990401f70": (GAP, _DEFER),
    "48ff79e3cf": (GAP, _DEFER),
    "a3a1e7bbc6": (GAP, _SEND_WITHOUT_INIT_HARDENED),
    "ffe8168eca": (GAP, _SEND_WITHOUT_INIT_HARDENED),
    "cefd7fefc7": (GAP, _SEND_WITHOUT_INIT_HARDENED),
    "4f8a31e058": (GAP, _SEND_AFTER_FAILED_INIT),
    "26342c987e": (GAP, _INIT_TIME_EARLY),
    "ffa667b08c": (EQ, _JUST_SENT),
    "c47098d4fa": (GAP, _ABORT_HARDENED),
    "3cbcf85ece": (GAP, _ABORT_HARDENED),
    "b84e3bd0a1": (GAP, _ABORT_HARDENED),
    "308edb0f6e": (GAP, _ABORT_HARDENED),
    "b771601c1c": (GAP, _ABORT_HARDENED),
    "fe62df4564": (GAP, _FAILURE_EXC),
    "25675e9ce2": (GAP, _FAILURE_EXC),
    "3e873f6ea5": (
        EQ,
        _INDEPENDENT + ": `failure_records` under its lock vs the tracker under `connection_lock`",
    ),
    "27804b8d2b": (EQ, _INDEPENDENT + ": the pool and info table vs the tracker, both under the lock"),
    "0699d5ac2f": (
        GAP,
        "the stale sockets are dropped after the rooms are failed, not before: the mock network calls "
        "`_on_peer_gone` on a peer's `unbind` only while a socket to it is cached, so a peer death "
        "that falls inside the rooms loop now flags its waiting receivers (those of rooms tracked "
        "after the snapshot, too) where the unmutated order would not. A DPOR exploration of a node "
        "failure against the peer's unbind and a receiver's poll (not in the default run at this "
        "commit)",
    ),
    "ca1e278cef": (EQ, _INDEPENDENT + ": appending the error vs logging it"),
    "f79b0c5c02": (
        EQ,
        _INDEPENDENT + ": `failure_records` vs `prefill_response_tracker`, both before the room opens",
    ),
    "0bc92bcfa3": (
        EQ,
        _INDEPENDENT + ": `prefill_response_tracker` vs `awaiting_transfer`, both before the room opens",
    ),
    "06a2a82cb1": (
        EQ,
        (
            "`awaiting_transfer` loses the room after, not before, `room_lifecycle` names the new "
            "request; `accepts_transfer_status` does not read `room_lifecycle`, and `owns()` callers "
            "only act when they own the room, which the old request no longer does at either point"
        ),
    ),
    "1c1470eaf4": (EQ, _HOOK_ORDER),
    "d235271d53": (EQ, _HOOK_ORDER),
    "eebad5001a": (
        EQ,
        (
            "`addr_to_rooms_tracker.get(None)` returns None without inserting (a defaultdict's `get` "
            "never creates), and the guard then returns as before"
        ),
    ),
    "786aeb4788": (
        GAP,
        (
            "the discard now runs before the is-it-still-ours test: with no tracker set left for the "
            "address `rooms` is None and the cleanup raises AttributeError. A stale-tracker check whose"
            " cleanup runs after a failure popped the set and nothing re-tracked the address"
        ),
    ),
    "9bdcbe3401": (
        EQ,
        (
            "`lost_peer` is set after, not before, the receiver is published in `receivers`; "
            "`_on_peer_gone` could flag it in between only if `sent_to` were true, which needs "
            "`init_time`, set later by `send_metadata`"
        ),
    ),
    "45925c4a1a": (
        EQ,
        (
            "on the failure path `bootstrap_infos` becomes None before `_fail_fetch` sets it to None; "
            "the `if` does not read it"
        ),
    ),
    "e52b7a0fdb": (EQ, _INDEPENDENT),
    "2729dc9e88": (EQ, _INDEPENDENT),
    "277a2ef371": (
        EQ,
        _INDEPENDENT + ": `invalidate_cached_bootstrap_infos` reads the entries, not `bootstrap_infos`",
    ),
    "dfb0a97dbf": (EQ, _INDEPENDENT + ": the failure record and status vs the pool"),
    "ae33dd9505": (
        EQ,
        (
            "the failure record and the Failed status are written by the polling thread, and the record"
            " is read only by `failure_exception()`, which that same thread calls after `poll()` "
            "returns"
        ),
    ),
    "a6e374e9a6": (EQ, _INDEPENDENT + ": the status table vs the pool"),
    "dc7cfcd678": (EQ, _INDEPENDENT + ": the pool vs the abort frames sent to the receiver's own infos"),
    "00b0eec3d1": (
        EQ,
        _INDEPENDENT + ": `_send_abort_once` reads `abort_notified` and `bootstrap_infos` only",
    ),
    "a9d7b6f1e9": (
        EQ,
        "`_owns_room()` does not read `conclude_state`, and `super().abort()` latches the same Failed",
    ),
    "ad2baedc56": (EQ, _INDEPENDENT + ": taking the reason vs latching `conclude_state`"),
    "71a468a99c": (
        EQ,
        (
            "`clear()` (the ownership test, the manager's and the receiver's tables) never reads "
            "`conclude_state`"
        ),
    ),
    "78490229ed": (EQ, _INDEPENDENT + ": the pool vs `prefill_response_tracker`"),
    "7045782c7a": (EQ, _INDEPENDENT),
    "d105f32947": (EQ, _INDEPENDENT),
    "b874d0f5fb": (EQ, _INDEPENDENT + ": `now` is read after both"),
    "4196432aef": (EQ, _INDEPENDENT + ": `_prefill_missing_since`/`_retry_ceiling` vs `_jitter`"),
}


# Census judgments carried to the same edit after the file changed (report.py): a function
# unchanged since the census keeps its judgment unless listed here (a reader elsewhere
# changed); a changed function keeps it only if listed in RE_READ, re-read after the change.
NOT_CARRIED: dict[str, str] = {
    "7374d8dd9f": (
        "`_hold_pages_in_doubt` (late-kv-write) now reads `_sent_indices` in `clear()`, also for a request "
        "that never sent its metadata"
    ),
}
RE_READ: dict[tuple[str, str, str], str] = {
    ("hardened", "manager.py", "KVManager.__init__"): "new fields for late-kv-write and bootstrap-partition",
    ("hardened", "manager.py", "KVManager._open_lifecycle"): "`answers.pop(room)` added",
    ("hardened", "manager.py", "KVManager.clear"): "`answers.pop(room)` added",
    ("hardened", "manager.py", "KVManager._handle_node_failure"): "a bootstrap-partition guard at the top",
}

# Survivors of the run at abac2c5 that make the same edit (the same diff, line numbers aside)
# as a census survivor in a file that changed since: key -> census key (report.py applies the
# NOT_CARRIED / RE_READ rules to them too).
SAME_EDIT: dict[str, str] = {
    "dd99278dbd": "5a70b56894",
    "44a0a094ba": "afddbdd790",
    "e6c9d6e847": "3aea30b1f3",
    "e6c7cf842a": "80763fc25c",
    "c76afd477e": "6c007d63fa",
    "895bc13b24": "c858b15091",
    "b9442f965c": "58612cfc79",
    "86e6a7b1ca": "5feb7f1926",
    "de0c35ea91": "7464405735",
    "0a78d6d29f": "89a4c339a9",
    "d8a9b9c6c7": "fefb95b0ff",
    "cc2c4611e3": "366006549c",
    "299e64a619": "b003e3015c",
    "d00942498e": "73a7c1cd14",
    "95bdea4998": "66782e3b92",
    "beff0c6024": "6843dadea8",
    "d10bab0673": "602151cf87",
    "1b462f2514": "d3d943ede9",
    "547b6cab5b": "4bd23bdd18",
    "d4253dc3a3": "bc2de92500",
    "e728984db1": "8d8db22743",
    "e6abbbf6df": "0e507b2cfe",
    "02ea3e670b": "e4f31562f5",
    "207381bbfa": "8562fb66ed",
    "fc09b1f9e0": "cefd7fefc7",
    "6236d28f3e": "965ca0f4ea",
    "b4c521a7ce": "6356a17042",
    "3ac19e834c": "ac59a78e51",
    "2b9bd70ea7": "19ebcb1046",
    "193df031a4": "5fd68fcf02",
    "e2872b5446": "344cde53fc",
}

_HELD_LOCK = (
    "`held_pages` is iterated (`pages_in_doubt`), stored (`hold_pages`) and decremented "
    "(`_answer_for_held_pages`) under `_held_lock`; without it (or with the read-modify-write split) "
    "two ranks' late answers can lose a decrement, or a store can change the dict during the "
    "iteration (RuntimeError). A DPOR exploration of two late answers and a `pages_in_doubt` against "
    "a held room (not in the default run at this commit)"
)
_ANSWERS_REUSE = (
    "a reopened room starts with the previous request's answer count, so `_hold_pages_in_doubt` holds "
    "too few ranks' worth. A late-kv-write check with a reused room id"
)
_ANSWERS_COUNT = (
    "answers are no longer counted, so a failed request holds its pages for every rank, also those that "
    "answered. A late-kv-write check that counts the answers still due after some ranks answered"
)
_RANKS_WINDOW = (
    "`window` is read only when a rank of the failed prefill delivered a status, so the NameError needs a "
    "node failure after statuses were heard; no run has one. A bootstrap-partition check where the "
    "prefill really dies after answering: it is failed once the window passed"
)
_OPEN_ANSWERS_ORDER = (
    "the answer count is dropped while the room still awaits the previous request's transfers, so a late "
    "answer in between is counted for the new request. A DPOR exploration of a reopen against a late "
    "transfer status (not in the default run at this commit)"
)
_ACCEPT_ORDER = (
    "acceptance is read before, not after, the held-pages check, which another thread's `clear` or reopen "
    "can change in between; undecided without a DPOR exploration of `accepts_transfer_status` against "
    "`clear` (not in the default run at this commit)"
)

JUDGMENTS.update(
    {
        "09d25901d5": (GAP, _HELD_LOCK),
        "b97b6103d5": (GAP, _HELD_LOCK),
        "061d84157b": (GAP, _HELD_LOCK),
        "26d8f53cb8": (GAP, _HELD_LOCK),
        "47efcd4731": (GAP, _HELD_LOCK),
        "909c859b30": (GAP, _HELD_LOCK),
        "ae0d088fb7": (GAP, _HELD_LOCK),
        "47f24d2956": (GAP, _HELD_LOCK),
        "71e6942852": (GAP, _RECORD_RACE),
        "29723796b6": (GAP, _ANSWERS_REUSE),
        "09a83e873f": (GAP, _ANSWERS_COUNT),
        "9d47f45eac": (GAP, _ANSWERS_COUNT),
        "2291adda43": (GAP, _STATE_BOUND),
        "23722a87bd": (GAP, _STATE_BOUND),
        "4e4c5df188": (GAP, _RANKS_WINDOW),
        "408552b0aa": (GAP, _RANKS_WINDOW),
        "bd87dbf474": (EQ, _INDEPENDENT),
        "a201985b43": (EQ, _INDEPENDENT + ": `addr` is a local the guard does not read"),
        "71c14bd690": (EQ, _FIELDS),
        "9da9718626": (EQ, _FIELDS),
        "c0dc320222": (EQ, _FIELDS),
        "9decec66b9": (EQ, _FIELDS),
        "042df918e0": (EQ, _FIELDS + " (`getattr` on the transport has no side effect)"),
        "24a71b63e3": (GAP, _OPEN_ANSWERS_ORDER),
        "5e3f63066b": (EQ, _INDEPENDENT + ": `accepts_transfer_status` does not read `room_lifecycle`"),
        "8317bd5413": (GAP, _ACCEPT_ORDER),
        "f25e175af6": (EQ, _INDEPENDENT),
        "e62534ba12": (
            EQ,
            "`clear` popped `request_status` first, so no transfer status is accepted (and counted) for "
            "the room in the window either order opens",
        ),
        "7c6ec469a0": (EQ, _INDEPENDENT + ": `answers` vs `failure_records`"),
        "f03090e706": (EQ, "`due` is a local computed from reads only; the guard then returns as before"),
    }
)
