"""The hand-read verdict on every surviving mutant, keyed by `Mutant.key`: `equivalent`
with the argument why no execution can tell it from the unmutated variant, or `gap`
with the check that would catch it. `RESULTS.md` prints each with its diff.

A key hashes the edit and its function's source before and after (`mutants.edit_key`), so
a judgment follows its mutant while that function is unchanged, and a key whose function
has changed since names a mutant that no longer exists (kept: harmless, and right again if
the function returns to that text). An argument that leans on other code (who else reads a
field, which thread calls a method) is to be re-read when that code changes: the key does
not see it. The keys were migrated from whole-file hashes by regenerating the mutants of
every committed version of the variant files; `7374d8dd9f` (a swap in `KVReceiver.__init__`)
was dropped, its argument broken by `_hold_pages_in_doubt` reading `_sent_indices`.

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
_THEN = "(judged at abac2c5, before the deep checks joined the default run) "

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
    "during iteration, in the heartbeat thread). The default run's `hit-vs-eviction` runs `init()` "
    "against a node failure with the key cached, so its receiver inserts only after the eviction, "
    "past the iteration. Caught by a DPOR exploration of a node failure against an `init()` that fills "
    "an uncached key"
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
    "the default run at abac2c5)"
)
_SETDEFAULT_RACE = (
    "`setdefault` runs unlocked, so it can fall between another receiver's locked `get(key) is infos` "
    "and `del pool[key]` and adopt the generation being invalidated (a request then sent to dead "
    "ports). Caught by a DPOR exploration of two receivers' setup/invalidate: the default run's four "
    "stale-bootstrap explorations (preemption bound 1 on hardened) did not reach it, none of them "
    "having a fill's `setdefault` find a generation another receiver is invalidating"
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
    _THEN + "no lesson's run on fixed has a `/route` fetch fail at `init()` (restart-recovery, the lesson "
    "that does, is `bug` on fixed before this code runs). A check: `/route` fails at init -> the "
    "request is Failed at once, reason 'Failed to fetch bootstrap info'"
)
_REGISTER_FAILS = (
    _THEN + "no run has registration with a prefill rank fail. A check: connect or send of the registration "
    "raises TransportError -> the request is Failed at once with the registration reason "
    "(tests/test_component_contract.py has it; the --impl run does not)"
)
_SEND_WITHOUT_INIT = (
    "the simulation's scheduler, like upstream's, sends only for a request whose init succeeded; "
    "stale-bootstrap's `send-after-failed-init` (added after the census) sends after a failed "
    "fetch, and the mutant survived it too (rerun at 1360555: the failed fetch already latched "
    "the request). A check: `send_metadata` without bootstrap info -> the request is Failed with "
    "reason 'send_metadata without bootstrap info (init failed)' (tests/test_component_contract.py "
    "has it; the --impl run does not)"
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
_TIMEOUT_LATCH_PROTOCOL = (
    "the latch is read only by a later `poll()` of this receiver, and none comes: after a poll that "
    "returned Failed the scheduler's next call on the receiver is `failure_exception()` (upstream's "
    "decode queues take it in the same pass, `_update_handshake_waiters` and `pop_transferred`; so does "
    "the simulation), which latches Failed itself before it clears (common/receiver.py). Upstream's own "
    "`_check_waiting_timeout` (0.5.19) does not latch either"
)
_SEND_WITHOUT_INFO_PROTOCOL = (
    "the branch runs only for a `send_metadata` without bootstrap info, which the scheduler never makes: "
    "it sends only for a request whose poll read WaitingForInput (upstream's `pop_preallocated`, "
    "`waiting_for_input`), which a receiver reads only after an init that found bootstrap info (or, on "
    "hardened, one waiting for its prefill: the first guard defers that send); after a failed init the "
    "poll reads Failed (latched) and the scheduler takes the exception. Not equivalent: where the "
    "simulation sends after an init that failed without writing Failed (no parallel info), the request "
    "is latched Failed either way, but with another recorded reason. Only a check of the reason's "
    "wording would catch it, and none may ask it (upstream's own repeat of this branch is the same gap, "
    "reference/upstream/survivors.py). A send before any init is outside the protocol (upstream's "
    "receiver has no `bootstrap_infos` then and raises AttributeError)"
)
_SEND_GIVE_UP_UNREACHABLE = (
    "reachable only with `waiting_timeout <= 0`: the first guard defers a send while "
    "`_prefill_missing_since` is set, and `poll()` resets it to None just before it sends the deferred "
    "metadata, so the `_wait_for_prefill()` after a failed send always starts a fresh wait and returns "
    "`0 < waiting_timeout`. A check at `waiting_timeout` 0 (no wait: a send that raises on a restarted "
    "prefill's old ports fails the request at once, as fixed does) catches it: restart-recovery's "
    "`no-wait-at-zero-timeout`, added after the second sample (the simulation has every timeout at 300 s)"
)
_TIMEOUT_RECORD_EARLY = (
    "every poll while waiting records a timeout failure for a request that has not timed out. A "
    "check that a waiting (later successful) request has no failure record"
)
_INIT_TIME_EARLY = (
    _THEN + "`init_time` is set before the sends instead of after: on failure `conclude_state` is latched "
    "first, so it is never read; on success it is earlier by the duration of the sends, zero on the "
    "virtual clock unless a send blocks. The simulation's `slow_send` (a paused prefill's metadata send "
    "blocks 1 s per message, then a poll 0.5 s before the waiting timeout counted from the send's "
    "return) and its invariant `timeout-counts-from-send` (added after the third sample) catch it; they "
    "run in failure-records' profile, where the fixed form is `bug` anyway, so "
    "the fixed mutant is told apart only once a fix lesson (stale-bootstrap: the waiting timeout is "
    "PR 36029's) checks that invariant too; hardened's (`e0cda5583d`) is caught. Since 2026-12-06 "
    "stale-bootstrap's simulation checks it and kills the fixed one too"
)

# -- hardened -------------------------------------------------------------------------
_FIELDS = "two independent field initialisations: neither reads the other, and nothing runs between them"
_ATOMIC_POP = (
    "the lock guards one `failure_records.pop(room, ...)`, atomic under the GIL; the other sections "
    "under `failure_lock` (`record_failure`'s check of `request_status` then its store, the pops in "
    "`clear` and `_open_lifecycle`) read nothing the pop changes before their own store, so a pop "
    "inside one of them equals a pop just before it"
)
_RECORD_LOCK_WIDER = (
    "the lock now also covers `answers.pop`, which takes no lock and which no other holder of "
    "`failure_lock` (`record_failure`, `failure_exception`) reads; `request_status` is still popped "
    "before the section and the record inside it, so a `record_failure` ordered before the section "
    "finds the room and its record is popped, and one ordered after finds no room, as before "
    "(the explored `no-record-after-clear` holds on it)"
)
_RECORD_RACE = (
    "`record_failure`'s check (`room in request_status`) and store are no longer atomic with "
    "`clear`'s pop of the record: a late abort that passed the check before `clear` popped "
    "`request_status` stores its record after `clear` popped the record, which then stays for a "
    "cleared room (the failure-records claim). A DPOR exploration of a late `abort()` against "
    "`clear()`: the default run has none for failure-records, and the simulation's `late_record` calls "
    "`record_failure` whole, after `clear()`"
)
_CLEAR_VS_FAILURE = (
    "`rooms.discard` in `clear` runs without `connection_lock`, concurrently with the heartbeat's "
    "locked `list(rooms)` snapshot (RuntimeError: Set changed size during iteration in the "
    "heartbeat thread, the live-set-race symptom). A DPOR exploration of `clear()` against a node "
    "failure (not in the default run at abac2c5)"
)
_CLEAR_DISCARD_UNLOCKED = (
    "only `rooms.discard(room)` leaves `connection_lock`: one set operation, atomic under the GIL (the "
    "rooms are ints: nothing runs Python code inside it). The set's other mutators either hold the lock "
    "and meet the discard before or after their own reads, giving an outcome the locked discard also "
    "gives by running before or after their section (the failure's `list(rooms)` is one C call, and "
    "its snapshot holding the room fails nothing: `clear` popped `request_status` first; mori's "
    "cleanup, discard then emptiness test, pops the set if the discard emptied it, as it does after a "
    "locked `clear`; the success pruning discards only rooms `clear` already popped), or run on the "
    "scheduler's thread, as `clear` does (`track_room` from a receiver's constructor), so they never "
    "interleave with it. (The RuntimeError the census feared needs the discard inside an iteration "
    "that runs Python code between items; `list(set)` does not.) Re-read after the third sample"
)
_CLEANUP_KEEPS_EMPTY_SET = (
    "the emptiness test runs before the discard, so the cleanup of a set's last room leaves that set, "
    "empty, under its address instead of popping it (a set already empty is popped, as before; one "
    "with other rooms loses only its own, as before). Nothing the protocol exposes differs: an empty "
    "set fails no room on a node failure, and a later room of that prefill is added to it; the state "
    "stays bounded by one set per prefill address, not per request. That is exactly what the "
    "stale-tracker right fix `discard_only` does by design (it never pops), so no check may flag it: "
    "equivalent to a correct fix, though not to hardened's own state. Re-read after the third sample"
)
_CLEAR_SPLIT = (
    "the address pop and the tracker lookup are no longer one locked step: between them a failure "
    "can pop the prefill's set and a new request reusing the room id re-track it in a new set, "
    "from which the old request's `clear` then discards it (the new request is then failed by no "
    "later node failure: the stale-tracker claim). A DPOR exploration of `clear()` against a node "
    "failure plus a re-registration and room reuse (the default run's `late-cleanup-keeps-new-set` "
    "runs mori's cleanup there, not `clear()`; the simulation runs `clear()` whole)"
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
    "prefill tracks the same room id again: since 2026-12-06 the exploration "
    "`late-cleanup-keeps-equal-set` (the cleanup's thread first), which kills it"
)
_PEER_GONE_LOCK = (
    "`_on_peer_gone` deletes pool entries without the lock, against receivers' locked "
    "check-then-delete in `invalidate_cached_bootstrap_infos` (a KeyError there when it falls "
    "between their `get` and `del`) and their locked `setdefault`. A DPOR exploration of a peer "
    "loss against a receiver's invalidation (the default run has none; the simulation runs "
    "`_on_peer_gone` whole, inside a restart step)"
)
_PEER_GONE_ORDER = (
    "receivers are marked `lost_peer` before the dead generations leave the pool: one polling in "
    "between resends through the still-cached dead generation. A DPOR exploration of a peer loss "
    "against a receiver's poll (the default run has none; the simulation runs `_on_peer_gone` whole, "
    "inside a restart step)"
)
_HEARTBEAT_PROBE = (
    _THEN + "the supervised-loops lesson drives only the DP dispatcher; no run makes a heartbeat probe "
    "raise on hardened's manager. A check whose transport's `health` raises once: the heartbeat "
    "goes on, `heartbeat_errors` names the error and the traceback is logged"
)
_STATE_BOUND = (
    _THEN + "a table entry of a cleared room is left behind, which no check of hardened's manager counts "
    "(failure-records counts `failure_records` only). A whole-state bound over the manager's "
    "tables after open/clear cycles (the simulation's object-graph bound)"
)
_FAILURE_RECORD_CLEAR = (
    _THEN + "a record made while the room was open survives `clear()` (failure-records' story only makes "
    "late records, which `record_failure` refuses). A failure-records check that fails an open "
    "request, clears it without `failure_exception()` and counts `failure_records`"
)
_REASON_HARDENED = (
    _THEN + "no run on hardened reads a failure reason (`failure_exception()` is never called). A check "
    "that a failed request's `failure_exception()` carries its reason"
)
_REUSE_NO_CLEAR = (
    _THEN + "room-reuse's story clears the previous request before reusing its id, so `clear` already "
    "removed what `_open_lifecycle` removes again. A room-reuse check that reopens a room id whose "
    "previous request was never cleared (its record, responses and transfer expectation must not "
    "carry over)"
)
_OPEN_ORDER = (
    "`request_status` gets the new request's Bootstrapping before `room_lifecycle` names it: a late "
    "abort of the previous request that checks `owns()` in between passes and fails the new "
    "request. A DPOR exploration of a room reopened against the previous request's late abort (the "
    "default run has none; the simulation's late aborts run between calls, never inside "
    "`_open_lifecycle`)"
)
_OPEN_ORDER_READ = (
    "(read again at c818337) `request_status` gets the new request's Bootstrapping before "
    "`room_lifecycle` names it. The window matters only to a caller that passes `owns()` with the "
    "previous request's lifecycle, i.e. a previous request still open when its room id reopens, and "
    "there hardened's own `abort()` and `clear()` (`owns()`, then the writes, not one step) already let "
    "that late call fail or clear the new request: no property of the new request's outcome holds on "
    "hardened and fails here. Not equivalent: a late `clear()` whose pops straddle the reopen can leave "
    "the new lifecycle with no status, which hardened cannot reach (its reopen writes the lifecycle "
    "first, its clear pops the status first); the new request then waits for its waiting timeout, as "
    "it does in hardened's reachable (no lifecycle, no status). Only a check of the manager's own "
    "tables against each other (a room with a lifecycle has a status) would catch it"
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
    "them (it runs only once `_prefill_missing_since` is set, by those two)"
)
_WAIT = (
    _THEN + "no run on hardened has a `/route` fetch fail while its prefill restarts (restart-recovery's "
    "story registers the new prefill before the next request asks). A restart-recovery check whose "
    "request asks while the prefill is down and must succeed once it registers, within the waiting "
    "timeout"
)
_WAIT_GIVE_UP = (
    _THEN + "no run waits for a prefill past the waiting timeout. A check whose prefill never comes back: "
    "the request ends Failed after `waiting_timeout` with the fetch/send reason"
)
_BACKOFF = (
    _THEN + "the retry back-off (doubling ceiling, jitter) is checked by tests/test_residual_lessons.py, not "
    "by the --impl run. A restart-recovery check counting `/route` fetches while a request waits"
)
_DEFER = (
    _THEN + "no run calls `send_metadata` while the prefill is missing. A restart-recovery check that sends "
    "metadata while waiting for the prefill: it is held, then sent once the prefill answers"
)
_RESEND = (
    _THEN + "no run has a prefill rank die after a request sent its metadata (restart-recovery's story "
    "kills the prefill between requests). A restart-recovery check where the prefill dies with a "
    "request waiting for its KV: the request resends to the successor and succeeds"
)
_RESEND_KEEPS_GENERATION = (
    "the resend no longer drops the generations this receiver used. `_on_peer_gone` already dropped, "
    "under the lock and before it marked the receiver, every cached generation that sends to the lost "
    "endpoint; on the mock transport a prefill's endpoints are all reported gone in one synchronous step "
    "(a restart or a kill unbinds them together, before any poll), so by the resend nothing the receiver "
    "used is left to drop, and the simulation's `restart_in_flight` (re-read after the third sample) "
    "meets the same pool either way. On a transport that reports each endpoint's loss on its own, a "
    "CP >= 2 receiver resending after cp rank 0's report would reuse cp rank 1's cached dead generation, "
    "send to it, and resend once more when that loss is reported: the same end, one report later. A "
    "simulation fault reporting a restarted prefill's endpoint losses one at a time, with a scheduler "
    "pass between (a mock transport change), and an invariant that a resend sends nothing to an "
    "endpoint of the generation it lost would catch it"
)
_RESEND_UNDECIDED = (
    _RESEND + "; that check would also decide whether this reordering inside the resend path is observable"
)
_MULTI_CP = (
    "with one CP rank the receiver holds no other cached generation at this point and "
    "`bootstrap_infos` is still None; with several, earlier CP ranks' generations stay cached (or "
    "`bootstrap_infos` holds them, so `poll` takes the setup as done). The stories have one CP rank; "
    "the simulation has CP-2 prefills, but its restarts take every rank's route away at once (`/route` "
    "503 with no rank registered), so the first CP rank fails first and nothing is cached yet. A check "
    "with prefill `attn_cp_size` 2 whose second CP rank's route (or registration) fails alone"
)
_ADOPTED = (
    "the generation recorded is this receiver's own fetched list, not the winner `setdefault` "
    "adopted, so a failure no longer invalidates the generation it used; on hardened the mock "
    "network's peer-loss notice (`_on_peer_gone`) drops that generation anyway in every scenario. A "
    "stale-bootstrap check with two receivers racing to install one key and the loser failing "
    "while its peer stays registered (no peer-loss notice)"
)
_TIMEOUT_HARDENED = (
    _THEN + "on hardened no request reaches the waiting timeout in any run (peer-loss notices end the "
    "stale-bootstrap story's wait early). A check whose prefill never answers: after "
    "`waiting_timeout` the request is Failed in the status table, with the timeout reason, its "
    "generation invalidated and an Abort sent"
)
_TIMEOUT_LATCH_HARDENED = (
    "the waiting timeout no longer latches `conclude_state`; it still writes Failed to the status "
    "table, where hardened keeps it (Failed is terminal: only a new request's Bootstrapping reopens "
    "the room, and the scheduler constructs receivers on the thread that took this Failed and ends "
    "the request in that pass with `failure_exception()`, which latches). Every later poll reads "
    "Failed from the table and latches it there (a peer-loss resend first finds the room not "
    "WaitingForInput and does nothing), so every poll returns Failed as before. Upstream's "
    "`_check_waiting_timeout` does not latch either (sglang 0.5.19). Re-read for the fourth sample"
)
_ABORT_HARDENED = (
    _THEN + "room-reuse's story aborts only a stale request. A check that aborting an open request on "
    "hardened leaves the manager's status Failed with the abort reason, and that a stale request's "
    "poll after its abort returns Failed, not the new request's status"
)
_FAILURE_EXC = (
    _THEN + "no run on hardened calls `failure_exception()`. A check that a failed request's "
    "`failure_exception()` returns its reason and that a poll afterwards stays Failed"
)
_SEND_WITHOUT_INIT_HARDENED = _SEND_WITHOUT_INIT.replace(
    " (tests/test_component_contract.py has it; the --impl run does not)", ""
)
_SEND_AFTER_FAILED_INIT = (
    _THEN + "`expect_transfer` now marks a request whose init failed as awaiting transfers, so late "
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
    "new request (not in the default run at abac2c5)"
)
_FORGET_SPLIT_HARDENED = (
    "forgetting the prefill and taking the snapshot become two locked steps; `clear` and the "
    "cleanup, which may now run between them, touch neither the pool nor the info table that the "
    "first step changed, so that order equals running them just before the whole section"
)

_DISCONNECT_LATE = (
    "the stale sockets are dropped after the rooms are failed, not before: the mock network calls "
    "`_on_peer_gone` on a peer's `unbind` only while a socket to it is cached, so a peer death "
    "that falls inside the rooms loop now flags its waiting receivers (those of rooms tracked "
    "after the snapshot, too) where the unmutated order would not. A DPOR exploration of a node "
    "failure against the peer's unbind and a receiver's poll (the default run has none; the "
    "simulation's restarts never fall inside the heartbeat's rooms loop)"
)

_DISCONNECT_LATE_READ = (
    "(read again at c818337) the stale sockets are dropped after the rooms are failed, not "
    "before: the mock network calls `_on_peer_gone` on a peer's `unbind` only while a socket to it is "
    "cached, so a peer death inside the rooms loop now flags the receivers that sent to it (each "
    "resends on its next poll; one already failed ignores the flag), where hardened's order misses that "
    "death. Not equivalent: with the unbind after the first room's failure (the `node_failure.after_room` "
    "hook), the mutant flags receivers and hardened flags none. But those flags are what a correct "
    "peer-loss callback does, and every outcome they lead to hardened reaches when the unbind falls "
    "just before its disconnect (every receiver flagged, none failed yet): no correctness property "
    "separates them; only a check asking for hardened's incidental order would, and none should"
)

JUDGMENTS: dict[str, tuple[str, str]] = {
    # fixed/bootstrap_server.py, fixed/dispatcher.py
    "b15ee95791": (EQ, _BASE_INIT),
    "9c17f25a96": (EQ, _BASE_INIT),
    "d627a847d2": (EQ, _DONE_CALLBACK),
    "3be71e87f2": (EQ, _DONE_CALLBACK),
    # fixed/manager.py
    "5b25d20e18": (GAP, _POOL_RACE),
    "0dbde1e5c3": (GAP, _POOL_RACE),
    "991b581244": (GAP, _POOL_RACE),
    "6fdac7e153": (EQ, _TRACKER_POP_UNLOCKED),
    "5aeb274f99": (EQ, _TRACKER_POP_UNLOCKED),
    "18581e91e6": (EQ, _TRACKER_POP_UNLOCKED),
    "e729d43ba2": (EQ, _TRACKER_POP_UNLOCKED + "; `addr = failed_bootstrap_addr` is a local"),
    "e3a1430631": (EQ, _INDEPENDENT + ": the pool and info table vs the tracker, both under the lock"),
    "f38e2e4d06": (GAP, _DISCONNECT),
    "97b38574d6": (EQ, _DISCONNECT_ORDER),
    "e89a44cf6e": (EQ, _HOOK_ORDER),
    # fixed/receiver.py
    "ec41e309a1": (GAP, _INVALIDATE_RACE),
    "b79e8b9951": (GAP, _INVALIDATE_RACE),
    "f73e5d3fb2": (EQ, _ATOMIC_GET),
    "07fa25ea53": (EQ, _ATOMIC_GET + "; the lock now covers only a local assignment"),
    "e94a82e197": (GAP, _SETDEFAULT_RACE),
    "0cbc9eefeb": (GAP, _SETDEFAULT_RACE),
    "7822f70f8b": (GAP, _SOCK_LOCK),
    "77f2142c95": (GAP, _SOCK_LOCK),
    "2e3e54261e": (GAP, _IS_EQ),
    "e5f5800d02": (EQ, _ENTRIES_CLEAR),
    "2ddcd453c7": (EQ, _ENTRIES_CLEAR),
    "71038c684c": (EQ, _ENTRY_BEFORE_REGISTER),
    "99f5e44258": (EQ, _ENTRY_BEFORE_REGISTER),
    "e6d5bdf33e": (EQ, _ENTRY_BEFORE_REGISTER + "; after the swap it is recorded only on success"),
    "1a5e7c07b7": (EQ, _INDEPENDENT),
    "5696990bc3": (EQ, _INDEPENDENT),
    "fc43061ab9": (
        EQ,
        "on the failure path `bootstrap_infos` becomes None before `_fail_fetch` sets it to None; "
        "the `if` does not read it",
    ),
    "245a531c06": (
        EQ,
        "`ReceiverBase.__init__` only sets fields and calls `track_room`, which never reaches the "
        "receiver, so `_connection_pool_entries` is not read before it exists",
    ),
    "61c5e05ea4": (GAP, _FETCH_FAILS),
    "a8f727f222": (EQ, _INDEPENDENT + ": the failure record and status vs the pool"),
    "a50151cece": (GAP, _REGISTER_FAILS),
    "fdffa23055": (GAP, _REGISTER_FAILS),
    "9aee506bc8": (GAP, _REGISTER_FAILS),
    "4eeb1087c8": (GAP, _SEND_WITHOUT_INFO_PROTOCOL),
    "894a4f12da": (GAP, _SEND_WITHOUT_INIT),
    "bc9cef5578": (GAP, _SEND_WITHOUT_INIT),
    "5505172cdc": (GAP, _SEND_WITHOUT_INIT + "; here the mutant raises TypeError"),
    "5241adac8c": (GAP, _INIT_TIME_EARLY),
    "12ba4244c8": (EQ, _INDEPENDENT + ": the pool vs the failure record and `conclude_state`"),
    "76f553a8cd": (GAP, _TIMEOUT_REASON),
    "9c0e875a36": (GAP, _TIMEOUT_STATUS),
    "82ae23ac1b": (GAP, _TIMEOUT_ABORT),
    "dfc239bb71": (EQ, _TIMEOUT_LATCH_PROTOCOL),
    "aa89b6e6fd": (GAP, _TIMEOUT_LATCH),
    "870a253660": (GAP, _TIMEOUT_RECORD_EARLY),
    "8e3298461e": (
        EQ,
        "the failure record and the Failed status are written by the polling thread, and the record "
        "is read only by `failure_exception()`, which that same thread calls after `poll()` returns",
    ),
    "fecd962c72": (EQ, _INDEPENDENT + ": the status table vs the pool"),
    "a4e7acf143": (EQ, _INDEPENDENT + ": the pool vs the abort frames sent to the receiver's own infos"),
    "352918302a": (
        EQ,
        _INDEPENDENT + ": `_send_abort_once` reads `abort_notified` and `bootstrap_infos` only",
    ),
    # hardened
    "85e7d7312d": (EQ, _BASE_INIT),
    "2848169a33": (EQ, _BASE_INIT),
    "122a0b50c9": (EQ, _FIELDS),
    "c68fb8208b": (EQ, _FIELDS),
    "2c419bec70": (EQ, _FIELDS),
    "8b639eed9f": (EQ, _FIELDS),
    "15ffa3a105": (EQ, _FIELDS),
    "efb598f7e3": (EQ, _FIELDS),
    "6f28b920da": (EQ, _FIELDS),
    "1fa4181e86": (EQ, _FIELDS),
    "f228cfc5b7": (EQ, _FIELDS),
    "5318c613f7": (EQ, _FIELDS),
    "1c0e1315a9": (EQ, _FIELDS),
    "cc06ab1113": (EQ, _FIELDS),
    "6b61a51fa3": (EQ, _FIELDS),
    "3baf591e61": (EQ, _FIELDS),
    "70e52dd1e3": (EQ, _FIELDS),
    "a14ed7e653": (EQ, _FIELDS),
    "1fdcbeba4b": (EQ, _FIELDS),
    "5ef9018037": (EQ, _DONE_CALLBACK),
    "a94eeb4209": (EQ, _DONE_CALLBACK),
    "3d8ab5f1dc": (EQ, _ATOMIC_POP),
    "aa8c6c9480": (EQ, _ATOMIC_POP),
    "bf5e48f0a6": (EQ, _ATOMIC_POP),
    "ba1bcf04ac": (EQ, _ATOMIC_POP),
    "1701f43f96": (GAP, _RECORD_RACE),
    "535def0c63": (GAP, _RECORD_RACE),
    "a099ded309": (GAP, _RECORD_RACE),
    "990c8ce6cb": (GAP, _RECORD_RACE),
    "7afb9ffccf": (GAP, _RECORD_RACE),
    "0b11682c9b": (GAP, _RECORD_RACE),
    "4970211fc5": (GAP, _CLEAR_VS_FAILURE),
    "1fff70f924": (GAP, _CLEAR_VS_FAILURE),
    "8f3b70f5ff": (GAP, _CLEAR_VS_FAILURE),
    "2721534c5a": (EQ, _CLEAR_DISCARD_UNLOCKED),
    "b7817835e1": (GAP, _CLEAR_VS_FAILURE),
    "91e37f7755": (GAP, _CLEAR_VS_FAILURE),
    "70dc2f697a": (GAP, _CLEAR_SPLIT),
    "4d1cfe295c": (GAP, _CLEAR_SPLIT),
    "64a9220387": (GAP, _CLEAR_SPLIT),
    "0ae68d018e": (GAP, _CLEAR_SPLIT),
    "2244795280": (EQ, _DETACHED_DISCARD),
    "7e84555998": (EQ, _DETACHED_DISCARD),
    "46969165be": (GAP, _CLEANUP_LOCKS),
    "4920a64bda": (GAP, _CLEANUP_LOCKS),
    "a2266e8712": (GAP, _CLEANUP_LOCKS),
    "8aa2e69219": (GAP, _CLEANUP_LOCKS),
    "f307c2dc9e": (GAP, _CLEANUP_LOCKS),
    "89823c605f": (GAP, _CLEANUP_LOCKS),
    "06d4749b1d": (GAP, _CLEANUP_LOCKS),
    "18a9341b33": (GAP, _CLEANUP_LOCKS),
    "625e5d4cf0": (GAP, _CLEANUP_LOCKS),
    "37bf596cdc": (GAP, _CLEANUP_LOCKS),
    "7b3ed69b5d": (GAP, _IS_NOT_SET),
    "484c3eeed4": (GAP, _PEER_GONE_LOCK),
    "5091311105": (GAP, _PEER_GONE_LOCK),
    "59a31b1bfb": (GAP, _PEER_GONE_ORDER),
    "c9db4da00f": (GAP, _POOL_RACE),
    "1eacac6e42": (GAP, _POOL_RACE),
    "f7ad5f4cc0": (GAP, _POOL_RACE),
    "27927609c8": (GAP, _POOL_RACE),
    "c63bc8c99f": (GAP, _POOL_RACE),
    "b128b57678": (GAP, _POOL_RACE),
    "123661f657": (GAP, _TRACKER_POP_HARDENED),
    "3926e7e7b0": (GAP, _TRACKER_POP_HARDENED),
    "c56cfa128e": (EQ, _FORGET_SPLIT_HARDENED),
    "77dd980d24": (EQ, _FORGET_SPLIT_HARDENED),
    "d30acafeb2": (GAP, _TRACKER_POP_HARDENED),
    "14f41e2a00": (GAP, _TRACKER_POP_HARDENED),
    "ec3a79ade6": (GAP, _TRACKER_POP_HARDENED),
    "68442ead98": (GAP, _TRACKER_POP_HARDENED),
    "26f5b48bcb": (GAP, _DISCONNECT),
    "99bd26e680": (GAP, _DISCONNECT),
    "12f7c11517": (EQ, _HOOK_ORDER),
    "b640be9456": (EQ, _HOOK_ORDER),
    "cce4085f07": (GAP, _HEARTBEAT_PROBE),
    "5013113f69": (GAP, _HEARTBEAT_PROBE),
    "e32cad68f8": (GAP, _HEARTBEAT_PROBE),
    "6dde28a899": (GAP, _HEARTBEAT_PROBE),
    "05fbe4ff87": (GAP, _HEARTBEAT_PROBE),
    "5a40e73215": (GAP, _HEARTBEAT_PROBE),
    "b6979cd0f3": (GAP, _STATE_BOUND),
    "0a6ea01300": (GAP, _STATE_BOUND),
    "b915323d06": (GAP, _STATE_BOUND),
    "6a5616875a": (GAP, _STATE_BOUND),
    "48ce93a001": (GAP, _STATE_BOUND),
    "34a0e09f62": (GAP, _STATE_BOUND),
    "58517336dc": (GAP, _STATE_BOUND),
    "7a6de9e6e1": (GAP, _STATE_BOUND),
    "c072b79a26": (GAP, _STATE_BOUND),
    "8e44a6b3ad": (GAP, _STATE_BOUND),
    "1cbd7965d5": (GAP, _STATE_BOUND),
    "b406707fbb": (GAP, _STATE_BOUND),
    "1be44396b1": (GAP, _STATE_BOUND),
    "ba2beed0a5": (GAP, _STATE_BOUND),
    "d4eed3a1f2": (GAP, _STATE_BOUND),
    "5827883781": (GAP, _STATE_BOUND),
    "221a3b487c": (GAP, _STATE_BOUND),
    "916004bd6f": (GAP, _STATE_BOUND),
    "ea098ceda9": (GAP, _STATE_BOUND),
    "d836f770d2": (GAP, _STATE_BOUND),
    "6aba82eade": (GAP, _STATE_BOUND),
    "0373acdbb5": (GAP, _STATE_BOUND),
    "c9956f0408": (GAP, _STATE_BOUND),
    "1f6c3e29a3": (GAP, _STATE_BOUND),
    "f18bfc59d5": (EQ, _CLEANUP_KEEPS_EMPTY_SET),
    "37f282f0a1": (GAP, _STATE_BOUND),
    "c9fa773d89": (GAP, _STATE_BOUND),
    "08a88a668e": (GAP, _FAILURE_RECORD_CLEAR),
    "5081005ef2": (GAP, _FAILURE_RECORD_CLEAR),
    "d2ece83cc2": (GAP, _FAILURE_RECORD_CLEAR),
    "d4e7736a87": (GAP, _FAILURE_RECORD_CLEAR),
    "ff74892598": (GAP, _FAILURE_RECORD_CLEAR),
    "d1405e641c": (GAP, _FAILURE_RECORD_CLEAR),
    "d59acfba02": (GAP, _REASON_HARDENED),
    "288f52bdc7": (GAP, _REASON_HARDENED),
    "5c93c71335": (GAP, _REASON_HARDENED),
    "3f3ab47d6f": (GAP, _REASON_HARDENED),
    "b1f38e7144": (GAP, _REASON_HARDENED),
    "eff95cbcdd": (GAP, _REUSE_NO_CLEAR),
    "37c1629dd2": (GAP, _REUSE_NO_CLEAR),
    "e0061e15db": (GAP, _REUSE_NO_CLEAR),
    "81ceb3cf25": (GAP, _REUSE_NO_CLEAR),
    "505fff5009": (GAP, _REUSE_NO_CLEAR),
    "b53559cf0a": (GAP, _REUSE_NO_CLEAR),
    "aea4c9d287": (GAP, _REUSE_NO_CLEAR),
    "2388b2f082": (GAP, _REUSE_NO_CLEAR),
    "14133f2c4f": (GAP, _REUSE_NO_CLEAR),
    "374cde205c": (GAP, _REUSE_NO_CLEAR),
    "7d6e5df3aa": (GAP, _OPEN_ORDER),
    "bfedaee587": (GAP, _OPEN_ORDER_READ),
    "7f0778ad67": (EQ, _ORDER_CLEAR),
    "a610dbe730": (EQ, _ORDER_CLEAR),
    "9b406dd3d3": (EQ, _ORDER_CLEAR),
    "4d8cf080fa": (EQ, _ORDER_CLEAR),
    "926ac5d2e6": (EQ, _ORDER_CLEAR),
    "886877db6f": (EQ, _ORDER_CLEAR),
    "09fd87301c": (EQ, _ORDER_CLEAR),
    "46adca2553": (EQ, _ABSENT_RETURNS),
    "33023f0419": (EQ, _ABSENT_RETURNS),
    "108a9d078d": (EQ, _WEAK_RECEIVERS),
    "52d431a304": (EQ, _WEAK_RECEIVERS),
    "1480d64f29": (EQ, _INIT_ORDER_HARDENED),
    "0916cba5b0": (EQ, _INIT_ORDER_HARDENED),
    "6f9621c2c8": (EQ, _INIT_ORDER_HARDENED),
    "7eca30034c": (GAP, _INVALIDATE_RACE),
    "02b487d1ab": (GAP, _INVALIDATE_RACE),
    "3a75adb3e8": (GAP, _SETDEFAULT_RACE),
    "62d7f0bb16": (GAP, _SETDEFAULT_RACE),
    "489aed8689": (GAP, _SOCK_LOCK),
    "ea6f48d3ec": (GAP, _SOCK_LOCK),
    "39da82d997": (GAP, _IS_EQ),
    "4bce003fa1": (EQ, _ALWAYS_SET_FIRST),
    "1223da8580": (EQ, _ENTRIES_CLEAR),
    "4d8ed70931": (EQ, _ENTRIES_CLEAR),
    "faa74b7f2f": (EQ, _ENTRY_BEFORE_REGISTER),
    "2b30cffa9c": (EQ, _ENTRY_BEFORE_REGISTER),
    "3235a77c1b": (EQ, _ENTRY_BEFORE_REGISTER),
    "3d87e47dd1": (GAP, _ADOPTED),
    "89dce84607": (GAP, _ADOPTED),
    "d8388ff043": (GAP, _ADOPTED),
    "83ea35567e": (GAP, _MULTI_CP),
    "13485e44ad": (GAP, _MULTI_CP),
    "3adee5b362": (GAP, _MULTI_CP),
    "86363a7f22": (GAP, _MULTI_CP),
    "cebe04120f": (GAP, _MULTI_CP),
    "072a3bc1a4": (GAP, _MULTI_CP),
    "6264812a3b": (GAP, _MULTI_CP),
    "02e119b3ac": (GAP, _MULTI_CP),
    "22763397bc": (GAP, _MULTI_CP),
    "9fe352b4a7": (GAP, _WAIT_GIVE_UP),
    "eb4afd0ca7": (GAP, _WAIT_GIVE_UP),
    "c09980859f": (GAP, _SEND_GIVE_UP_UNREACHABLE),
    "e8acfe37aa": (GAP, _WAIT_GIVE_UP),
    "f7fdd5d9e6": (GAP, _TIMEOUT_HARDENED),
    "263c055970": (GAP, _TIMEOUT_HARDENED),
    "ac20864c31": (GAP, _TIMEOUT_HARDENED),
    "3a4f993039": (GAP, _TIMEOUT_HARDENED),
    "418cfe9f5c": (GAP, _TIMEOUT_HARDENED),
    "83255b7e9d": (GAP, _TIMEOUT_HARDENED),
    "f2358348a0": (EQ, _TIMEOUT_LATCH_HARDENED),
    "a485be9608": (GAP, _TIMEOUT_HARDENED),
    "5414280005": (GAP, _TIMEOUT_HARDENED),
    "ae136f03cc": (GAP, _RESEND),
    "8ec4cf18fa": (GAP, _RESEND),
    "89ca1ff61a": (GAP, _RESEND),
    "afcc260b02": (GAP, _RESEND),
    "622ee954b2": (GAP, _RESEND),
    "881e889ee6": (GAP, _RESEND),
    "61b0862c11": (GAP, _RESEND),
    "b1161c0643": (GAP, _RESEND),
    "e543feece5": (GAP, _RESEND),
    "67c49b5577": (GAP, _RESEND),
    "e771974caf": (GAP, _RESEND_KEEPS_GENERATION),
    "e3c468b679": (GAP, _RESEND),
    "93f951e585": (GAP, _RESEND),
    "175bd7fcac": (GAP, _RESEND),
    "5f16ba9e7c": (GAP, _RESEND),
    "8dfa86531d": (GAP, _RESEND),
    "5c627a2b32": (GAP, _RESEND),
    "3a277e0ba3": (GAP, _RESEND),
    "e219ed0835": (GAP, _RESEND),
    "455f2a1fda": (GAP, _RESEND),
    "bca2445fef": (GAP, _RESEND),
    "525b0e2335": (GAP, _RESEND),
    "85dd8464ba": (GAP, _RESEND),
    "9aa09a2c1b": (GAP, _RESEND),
    "c3271a3d0c": (GAP, _RESEND),
    "0ee2ce04ef": (GAP, _RESEND),
    "53492d7b92": (GAP, _RESEND_UNDECIDED),
    "782826c861": (GAP, _RESEND_UNDECIDED),
    "053ae61f2a": (GAP, _WAIT),
    "cad2e1681f": (GAP, _WAIT),
    "7bc2de0ae7": (GAP, _WAIT),
    "1f35840737": (GAP, _WAIT),
    "fb912a99fd": (GAP, _WAIT),
    "13aa56173e": (GAP, _WAIT),
    "7271c4ffcf": (GAP, _WAIT),
    "d796d2273d": (GAP, _WAIT),
    "41477b1bbd": (GAP, _WAIT),
    "4a97171a49": (GAP, _WAIT),
    "a1d81ca9cd": (GAP, _WAIT),
    "1a65504960": (GAP, _WAIT),
    "a4604413cf": (GAP, _WAIT),
    "468fc492d2": (GAP, _WAIT),
    "d604b91e91": (GAP, _WAIT),
    "272800adb6": (GAP, _WAIT),
    "5ededeb0a7": (GAP, _BACKOFF),
    "4d851f89be": (GAP, _BACKOFF),
    "fe361cd99a": (GAP, _BACKOFF),
    "9badc40328": (GAP, _BACKOFF),
    "81f91e6259": (GAP, _BACKOFF),
    "c891da30af": (GAP, _BACKOFF),
    "08dcba9a97": (GAP, _BACKOFF),
    "32a38fbb11": (GAP, _DEFER),
    "4819a70c77": (GAP, _DEFER),
    "9115af399f": (GAP, _DEFER),
    "41abdd4af2": (GAP, _DEFER),
    "8278d9900f": (GAP, _DEFER),
    "ffb6cd5777": (GAP, _SEND_WITHOUT_INIT_HARDENED),
    "db9e14bb6a": (GAP, _SEND_WITHOUT_INIT_HARDENED),
    "5caa51eb14": (GAP, _SEND_WITHOUT_INFO_PROTOCOL),
    "6972ccf528": (GAP, _SEND_AFTER_FAILED_INIT),
    "e0cda5583d": (GAP, _INIT_TIME_EARLY),
    "498f9caf6d": (EQ, _JUST_SENT),
    "926640cb69": (GAP, _ABORT_HARDENED),
    "66894d4fde": (GAP, _ABORT_HARDENED),
    "95da7beef3": (GAP, _ABORT_HARDENED),
    "a36869b77d": (GAP, _ABORT_HARDENED),
    "f829eb1d16": (GAP, _FAILURE_EXC),
    "a2f3aeccdc": (GAP, _FAILURE_EXC),
    "ab4d171568": (
        EQ,
        _INDEPENDENT + ": `failure_records` under its lock vs the tracker under `connection_lock`",
    ),
    "7991cfccb3": (
        EQ,
        _INDEPENDENT + ": `failure_records` under its lock vs the tracker under `connection_lock`",
    ),
    "b907aa6851": (EQ, _INDEPENDENT + ": the pool and info table vs the tracker, both under the lock"),
    "6628e10ebe": (EQ, _INDEPENDENT + ": the pool and info table vs the tracker, both under the lock"),
    "700f7541a5": (GAP, _DISCONNECT_LATE),
    "b8e09de619": (GAP, _DISCONNECT_LATE_READ),
    "0c2dd163e8": (EQ, _INDEPENDENT + ": appending the error vs logging it"),
    "ce2d19979e": (
        EQ,
        _INDEPENDENT + ": `failure_records` vs `prefill_response_tracker`, both before the room opens",
    ),
    "b3d80cfbd2": (
        EQ,
        _INDEPENDENT + ": `failure_records` vs `prefill_response_tracker`, both before the room opens",
    ),
    "105322704e": (
        EQ,
        _INDEPENDENT + ": `prefill_response_tracker` vs `awaiting_transfer`, both before the room opens",
    ),
    "490ea48892": (
        EQ,
        _INDEPENDENT + ": `prefill_response_tracker` vs `awaiting_transfer`, both before the room opens",
    ),
    "9e233b1cfb": (
        EQ,
        (
            "`awaiting_transfer` loses the room after, not before, `room_lifecycle` names the new "
            "request; `accepts_transfer_status` does not read `room_lifecycle`, and `owns()` callers "
            "only act when they own the room, which the old request no longer does at either point"
        ),
    ),
    "f1ee901129": (EQ, _HOOK_ORDER),
    "3767bb6a25": (
        EQ,
        (
            "`addr_to_rooms_tracker.get(None)` returns None without inserting (a defaultdict's `get` "
            "never creates), and the guard then returns as before"
        ),
    ),
    "22bb1c2202": (
        GAP,
        (
            "the discard now runs before the is-it-still-ours test: with no tracker set left for the "
            "address `rooms` is None and the cleanup raises AttributeError. A stale-tracker check whose"
            " cleanup runs after a failure popped the set and nothing re-tracked the address"
        ),
    ),
    "5036f5f58b": (
        EQ,
        (
            "`lost_peer` is set after, not before, the receiver is published in `receivers`; "
            "`_on_peer_gone` could flag it in between only if `sent_to` were true, which needs "
            "`init_time`, set later by `send_metadata`"
        ),
    ),
    "217484f14f": (
        EQ,
        (
            "on the failure path `bootstrap_infos` becomes None before `_fail_fetch` sets it to None; "
            "the `if` does not read it"
        ),
    ),
    "c460e15a98": (EQ, _INDEPENDENT),
    "d4be257ead": (EQ, _INDEPENDENT),
    "6c5ee90c05": (
        EQ,
        _INDEPENDENT + ": `invalidate_cached_bootstrap_infos` reads the entries, not `bootstrap_infos`",
    ),
    "f15bc80677": (EQ, _INDEPENDENT + ": the failure record and status vs the pool"),
    "c4489530ec": (
        EQ,
        (
            "the failure record and the Failed status are written by the polling thread, and the record"
            " is read only by `failure_exception()`, which that same thread calls after `poll()` "
            "returns"
        ),
    ),
    "4d40e07622": (EQ, _INDEPENDENT + ": the status table vs the pool"),
    "6e53e544bb": (EQ, _INDEPENDENT + ": the pool vs the abort frames sent to the receiver's own infos"),
    "f7dd3106a4": (
        EQ,
        _INDEPENDENT + ": `_send_abort_once` reads `abort_notified` and `bootstrap_infos` only",
    ),
    "a0ad239796": (
        EQ,
        "`_owns_room()` does not read `conclude_state`, and `super().abort()` latches the same Failed",
    ),
    "b9f41a6943": (EQ, _INDEPENDENT + ": taking the reason vs latching `conclude_state`"),
    "475c351a42": (
        EQ,
        (
            "`clear()` (the ownership test, the manager's and the receiver's tables) never reads "
            "`conclude_state`"
        ),
    ),
    "847d7a5ea4": (EQ, _INDEPENDENT + ": the pool vs `prefill_response_tracker`"),
    "e31b841c81": (EQ, _INDEPENDENT),
    "3be1984dbb": (EQ, _INDEPENDENT),
    "e429ff18ff": (EQ, _INDEPENDENT + ": `now` is read after both"),
    "5dbfab32f6": (EQ, _INDEPENDENT + ": `_prefill_missing_since`/`_retry_ceiling` vs `_jitter`"),
}


_HELD_LOCK = (
    "`held_pages` is iterated (`pages_in_doubt`), stored (`hold_pages`) and decremented "
    "(`_answer_for_held_pages`) under `_held_lock`; without it (or with the read-modify-write split) "
    "two ranks' late answers can lose a decrement, or a store can change the dict during the "
    "iteration (RuntimeError). A DPOR exploration of two late answers and a `pages_in_doubt` against "
    "a held room (late-kv-write's only check is its story, which calls them one at a time)"
)
_ANSWERS_REUSE = (
    "a reopened room starts with the previous request's answer count, so `_hold_pages_in_doubt` holds "
    "too few ranks' worth. A late-kv-write check with a reused room id: since 2026-12-06 "
    "`reused-room-counts-own-answers`, which kills it"
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
    "transfer status (not in the default run at abac2c5)"
)
_ACCEPT_ORDER = (
    "acceptance is read before, not after, the held-pages check, which another thread's `clear` or reopen "
    "can change in between; undecided without a DPOR exploration of `accepts_transfer_status` against "
    "`clear` (the default run has none)"
)

JUDGMENTS.update(
    {
        "4ab4ecc9a3": (GAP, _HELD_LOCK),
        "3ff3ae37db": (GAP, _HELD_LOCK),
        "a41c6b0d93": (GAP, _HELD_LOCK),
        "7c9c50dfdd": (GAP, _HELD_LOCK),
        "702a58ea8c": (GAP, _HELD_LOCK),
        "2e5c331ec9": (GAP, _HELD_LOCK),
        "a6f464c923": (GAP, _HELD_LOCK),
        "4ef3f73f87": (GAP, _HELD_LOCK),
        "c501d65b70": (EQ, _RECORD_LOCK_WIDER),
        "bdd1b4e790": (GAP, _ANSWERS_REUSE),
        "2adf4e1036": (GAP, _ANSWERS_COUNT),
        "4208f43803": (GAP, _ANSWERS_COUNT),
        "9c00b54b97": (GAP, _STATE_BOUND),
        "335893c26b": (GAP, _STATE_BOUND),
        "4f5ccd3b97": (GAP, _RANKS_WINDOW),
        "c55f447a33": (GAP, _RANKS_WINDOW),
        "0817c5684a": (EQ, _INDEPENDENT),
        "916fb5a3ce": (EQ, _INDEPENDENT + ": `addr` is a local the guard does not read"),
        "1866957950": (EQ, _FIELDS),
        "fd9bffb6e0": (EQ, _FIELDS),
        "d5e737ffc6": (EQ, _FIELDS),
        "ee57f9ea1b": (EQ, _FIELDS),
        "91c09efdaf": (EQ, _FIELDS + " (`getattr` on the transport has no side effect)"),
        "e99ad9e970": (GAP, _OPEN_ANSWERS_ORDER),
        "f51bacd69b": (EQ, _INDEPENDENT + ": `accepts_transfer_status` does not read `room_lifecycle`"),
        "e2d9c1e77d": (GAP, _ACCEPT_ORDER),
        "7e0faa08a4": (EQ, _INDEPENDENT),
        "617417456e": (
            EQ,
            "`clear` popped `request_status` first, so no transfer status is accepted (and counted) for "
            "the room in the window either order opens",
        ),
        "2987e70c9b": (EQ, _INDEPENDENT + ": `answers` vs `failure_records`"),
        "b01d8dfff0": (EQ, "`due` is a local computed from reads only; the guard then returns as before"),
    }
)

# Judged on the sample census at e3df7aa (RESULTS.md), the deep checks in the default run.
_HELD_NOT_RELEASED = (
    "late answers no longer release held pages (or no longer count down where more than one is due), "
    "so a failed request's pages stay in doubt until HOLD_FOR expires although every rank answered: a "
    "bounded hold, and late-kv-write's only check, its story, does not ask for the pages in doubt "
    "after the answers. A late-kv-write check that, once every rank holding the metadata answered "
    "late, `pages_in_doubt()` is empty"
)
_RELEASE_LATE = (
    "`_release_expired_pages()` now follows the `return`, so `pages_in_doubt()` no longer lets go of "
    "expired holds itself: it names pages whose HOLD_FOR passed until the next status or heartbeat "
    "probe releases them. A late-kv-write check that asks for the pages in doubt once HOLD_FOR has "
    "passed, with no status or probe in between"
)
_RELEASE_ORDER = (
    "the expired holds are let go after, not before, the held-pages check: for a room whose hold "
    "expired the call returns False either way (a held room is not awaiting a transfer, so it is not "
    "accepted) and counts nothing; the expired entry it decrements instead of dropping is dropped by "
    "the next release, which every other reader (`pages_in_doubt`, the probe, the next status) runs "
    "first"
)
_CLEANUP_FIRST = (
    "mori's cleanup no longer discards the finished room (or pops the emptied set), so the room stays "
    "in its prefill's tracker set until that prefill fails. Unseen: in the simulation the scheduler's "
    "`clear()`, which pops the address and discards the room itself, always runs before the cleanup, "
    "which then stops at its first step; stale-tracker's story and exploration run the cleanup where "
    "a failure replaced the set, where it returns anyway. A stale-tracker check that runs a finished "
    "room's cleanup before its `clear()` and finds the tracker without the room (the whole-state "
    "bound would see it if the simulation's decode-status thread could run ahead of the scheduler)"
)
_RESEND_CLOCK = (
    "after a peer loss the receiver keeps the dead generation and the first send's `init_time`: "
    "while it waits for the successor, `poll` runs the waiting timeout from the first send, not from "
    "the loss, and `sent_to` still names the dead ranks (a second rank's loss restarts the wait). "
    "The simulation's `restart_in_flight` loses the peer right after the send, where the two clocks "
    "agree. A restart-recovery check where the prefill dies half a waiting timeout after the send "
    "and its successor registers within a waiting timeout of the loss: the request succeeds"
)
_RESEND_TRACKER = (
    "the dead prefill's Success answers stay in `prefill_response_tracker`, so after the resend the "
    "successor's answers are counted on top of them: with TP 2, a rank that answered before the loss "
    "lets the request read Success once one successor rank answers, the other still writing its "
    "pages. The simulation's prefills die before or right after a send, never between two ranks' "
    "answers. A restart-recovery check with TP 2 where one rank answers and then the prefill dies: "
    "Success only after both successor ranks answered"
)
_RESEND_INVALIDATE_EARLY = (
    "the receiver now invalidates its cached generations on a peer loss also when it no longer waits "
    "(Transferring, or done): those with the dead endpoint are gone already (`_on_peer_gone` dropped "
    "every generation naming it), so only a live generation of another CP rank can go, and with it "
    "the record a later invalidation would use; the next request then fetches `/route` once more. "
    "The simulation's faults take a whole prefill away. A check with CP 2 where one CP rank's "
    "prefill rank dies during a transfer: the other CP rank's generation stays cached"
)
_ABORT_SKIPPED = (
    "an owned request's abort no longer reaches the base `abort()`: no 'Aborted by AbortReq.' record "
    "and no Failed in the manager's table, though the receiver still latches Failed, so the scheduler "
    "ends the request as before. The simulation aborts open requests (`abort_clear`, the drain) but "
    "checks only that a reason recorded is kept, and none is recorded here. A check that an aborted "
    "open request's `failure_exception()` names the abort"
)

JUDGMENTS.update(
    {
        "e1be0251a4": (GAP, _HELD_LOCK),
        "f22541c2d4": (GAP, _HELD_LOCK),
        "58e691306c": (GAP, _HELD_LOCK),
        "1b6f121faa": (GAP, _HELD_LOCK),
        "fb7f573397": (GAP, _HELD_LOCK),
        "40af5bc1d6": (EQ, _FIELDS),
        "b5c059af8c": (EQ, _FIELDS),
        "be1cb378ed": (GAP, _HELD_NOT_RELEASED),
        "607bbfdf37": (GAP, _RELEASE_LATE),
        "7d5b3bc43b": (GAP, _ACCEPT_ORDER),
        "b05be2b403": (EQ, _RELEASE_ORDER),
        "c6c77cb36d": (EQ, _INDEPENDENT + ": appending the error vs logging it"),
        "6401f9a3f1": (GAP, _HELD_NOT_RELEASED),
        "567d0faf89": (GAP, _CLEANUP_FIRST),
        "149e68f91c": (GAP, _RESEND_CLOCK),
        "226f5ed404": (GAP, _RESEND_TRACKER),
        "f893303e75": (GAP, _RESEND_INVALIDATE_EARLY),
        "34118a52ec": (GAP, _HELD_LOCK),
        "cd141e7e8c": (GAP, _HELD_LOCK),
        "ec879d744c": (GAP, _ABORT_SKIPPED),
        "d9234a8d5e": (
            EQ,
            "only the order of the cleanup's first step and a hook point changes; a hook with no "
            "callback does nothing (hooks are our instrumentation), and stale-tracker's callback (a "
            "failure and a re-registration) then runs before the cleanup instead of inside it, which "
            "the cleanup meets as any earlier failure",
        ),
        # the second sample (fresh_sample/, seed 2), read at 82c0e60
        "ddad0c11af": (
            GAP,
            "a probe that raised leaves no entry in `heartbeat_errors` (the log line still names it, with "
            "its traceback): no check reads that list; one asking for a raising probe's record would",
        ),
        "bef1a15c45": (
            EQ,
            "the probe lets the expired holds go after the probe, not before: the probe itself reads no "
            "held pages, and every reader of them (`pages_in_doubt`, `accepts_transfer_status`) lets them "
            "go first itself",
        ),
    }
)
