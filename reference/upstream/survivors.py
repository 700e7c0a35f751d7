"""Why a mutant of upstream's code survives: equivalent, or a gap with the check it needs.

`classify(operator, line, lesson, block="", body="")` reads what the mutant changed
(its operator, the source line it changed, the header of the block around it, e.g. `if
self.bootstrap_infos is None:`, and for a removed lock the first statement it guarded;
the same in every release that has them) and answers
either `equivalent: <why no execution can tell it apart>` or
`gap: <what would catch it>`. Only survivors are classified (`mutate.summarize`): a
rule never turns a kill into anything. An equivalent survivor is left out of the kill
rate; a gap is not.
"""

from __future__ import annotations

import re

_SMALL = "CPython keeps one object per small int (-5..256) and one None: `==` and `is` agree"
_LATCH = (
    "gap: the latch matters only when a late Success lands before the scheduler's first poll; "
    "hardened leaves a failed fetch unlatched on purpose (it retries), so failure-recorded cannot ask it"
)

_ABORT_TOLD = (
    "our fixed and hardened forms' abort() records and fails the room without telling the prefill (as "
    "#24522 wrote it; hardened holds the pages instead), so no check may require an ABORT on abort()"
)
_ABORT = (
    f"gap: abort() telling the prefill ranks in the default configuration: {_ABORT_TOLD}; "
    "abort-reaches-prefill asks it of the waiting timeout (each rank once) and that no abort repeat it, "
    "rendezvous-abort-told (configuration `prefill_complete`, 0.5.23) of a bootstrapped request given up on"
)

_NO_RANKS = (
    "gap: a prefill reporting no ranks (a parallel info with pp_size 0: upstream's bootstrap server stores "
    "it unchecked, its own prefill never sends it): upstream's assert raises AssertionError out of `init` "
    "into the scheduler (its `add` does not catch it), a crash no check may require; without it the request "
    "waits for its waiting timeout and fails, as our forms do (measured on 0.5.19, 0.5.23 and fixed)"
)

# (operator, or "" for any; a regular expression the changed line must match; one the
# header of its block must match, or ""; why).
EQUIVALENT: tuple[tuple[str, str, str, str], ...] = (
    ("delete a statement", r'^"""', "", "a docstring"),
    ("", r"^logger\.", "", "logging only: the call's arguments and result reach only the log"),
    ("delete a statement", r'^f"', "", "a log message's text"),
    ("== -> is", r"(== KVPoll\.|== None|== 200\b|target_tp_rank == self\.target_tp_rank)", "",
     f"upstream's statuses, ranks and HTTP 200 are small ints: {_SMALL}"),
    ("is -> ==", r"is (not )?None\b", "", f"None is a singleton: {_SMALL}"),
    ("delete a statement", r"^affected_rooms\.append\(room\)$", "",
     "the list is local and read only by the log line's count"),
    ("delete a statement", r"^session = None$", "",
     "a dead store: `session` is assigned before every read and never read after the try"),
    ("int + 1", r"^self\.heartbeat_failures\.get\(bootstrap_addr, 0\)$", "",
     "the default is never used: both branches before this read set the address's count"),
    ("", r"(getEffectiveLevel\(\) <= logging\.DEBUG|^access_log = self\.app\.logger$)", "",
     "it only picks aiohttp's access logger (log output)"),
    ("delete a statement", r"^self\._connection_pool_entries\[bootstrap_key\] = self\.bootstrap_infos$",
     r"^if cached_bootstrap_infos is None:$",
     "the record before registration names an object not yet in the pool; invalidation drops only "
     "entries identical to a recorded object, and the record after the setdefault is made anyway"),
    ("", r"^return False$", r"^if self\.bootstrap_infos is None:$",
     "unreachable: `_register_kv_args`' only caller, `_setup_bootstrap_infos`, calls it right after "
     "setting `bootstrap_infos` to a list"),
    ("delete a statement", r"^return True$", r"^if not self\.bootstrap_infos:$",
     "building the registration message is pure (it packs the KV args) and the loop after it, over the "
     "empty list, sends nothing and returns True, as the deleted line does"),
    ("delete a statement", r"^self\._on_heartbeat_success\(bootstrap_addr\)$", "",
     "the hook is a no-op where this survives: 0.5.23's `CommonKVManager._on_heartbeat_success` is "
     "`pass` and no class of its disaggregation package overrides it (0.5.19's mooncake prunes there, and "
     "the same deletion is killed)"),
    ("delete a statement", r"^asyncio\.set_event_loop\(self\._loop\)$", "",
     "it only makes the loop the thread's current one outside a running loop: every call on that thread "
     "runs inside `run_until_complete` or `run_forever` (aiohttp's setup and site, the handlers, the "
     "cleanup), where `get_event_loop()` returns the running loop, and the thread ends with the loop"),
    ("delete a statement", r"^self\._connection_pool_entries\.clear\(\)$", "",
     "a second invalidation by the same receiver finds its recorded objects gone from the pool (an "
     "identity test) and a receiver fills the pool only once, so the kept record drops nothing"),
)  # fmt: skip

_GIL = (
    "the section is one C-level operation on a dict with str keys (no bytecode runs inside it, so no "
    "thread switches there: atomic under the GIL, and under free-threaded CPython's per-dict lock); "
)
# A removed lock, by the first statement it guarded: sections no other thread can split.
UNCONTENDED: tuple[tuple[str, str], ...] = (
    (r"^cached_bootstrap_infos = self\.kv_mgr\.connection_pool\.get\(bootstrap_key\)$",
     _GIL + "a read of one key, which sees the entry or its absence, as a locked read placed before or "
     "after each writer's section does, and the receiver reads nothing else of the pool after it"),
    (r"^addresses = list\(self\.prefill_info_table\.keys\(\)\)$",
     _GIL + "`list()` of the keys view copies them in C after sizing the list (no allocation, so no "
     "collection, during the copy), and sees one state of the table, as a locked copy does"),
    (r"session_pool",
     "only the heartbeat thread touches `session_pool` (upstream's one reader and writer, in this loop, "
     "and one heartbeat thread per manager): the lock is never contended"),
)  # fmt: skip

# The same, for gaps: what the default run does not drive, and what would catch it.
GAPS: tuple[tuple[str, str, str, str], ...] = (
    ("remove a lock", r"^with lock:$", "",
     "gap: the per-endpoint socket lock keeps another thread's use of the same PUSH socket (the "
     "heartbeat's `disconnect_endpoint` closes it under this lock) out of a `send_multipart` in "
     "progress; what it guards is libzmq's socket state inside one pyzmq call, which frontrun neither "
     "traces (site-packages, C) nor splits (one step), so the lock stage's explorations cannot contend it"),
    ("remove a lock", r"_lifecycle_lock", "",
     "gap: `_lifecycle_lock` is a `nullcontext()` unless the manager defers decode allocation "
     "(configuration `prefill_complete`); there it is an RLock keeping the prefill-recompute callback's "
     "abort (`_fail_prefill_recompute`) out of a poll, which the lock stage's `recompute-failure-vs-poll` "
     "contends (a poll that read Success must not be followed by the request's failure); a removed "
     "section it does not run (`clear`'s) is not contended"),
    ("remove a lock", r"", "",
     "gap: the default run scripts one interleaving (hooks), so a removed lock is never contended; "
     "no exploration of the lock stage (`mutate.py --explore-locks`, `EXPLORED_WITH`) contends it"),
    ("", r"(_send_abort_notification|abort_notified|ensure_abort_notified|bootstrap_infos is not None$)", "",
     _ABORT),
    ("delete a statement", r"^self\.bootstrap_infos = None$", "",
     "gap: a receiver whose fetch failed on a later CP rank keeps the earlier rank's infos, which only "
     f"an abort()'s notification would read; {_ABORT_TOLD}"),
    ("and <-> or", r"^if ip and port:$", "",
     "gap: an info with a rank_ip but no rank_port, or the reverse; every cached info is a registered "
     "rank's, and upstream's PUT /route takes both (`data[\"rank_ip\"]`, `int(data[\"rank_port\"])`), "
     "so none is driven"),
    ("", r"(disconnect_endpoint|^ip = info|^port = info|^if ip and port|^na = NetworkAddress|"
         r"^stale_endpoints\.add)", "",
     "gap: dead-prefill-disconnected (stale-bootstrap) asks that each cached rank endpoint of a dead "
     "prefill be disconnected; this mutant still disconnects those in the scenario"),
    ("delete a statement", r"^return$", r"_owns_bootstrap_room",
     "gap: a cleared receiver's late abort (configuration `prefill_complete`): retired-receiver-abort "
     "asks that it leave the room alone, rendezvous-abort-told that it tell the prefill nothing (its "
     "receivers' `init` fetched the prefill's ranks); this mutant does both there"),
    ("", r"", r"_owns_bootstrap_room",
     "gap: a receiver that does not own its room (configuration `prefill_complete`, check "
     "retired-receiver-abort); this mutant keeps what that check reads"),
    ("delete a statement", r"^self\.conclude_state = (KVPoll\.Failed|status)$", "", _LATCH),
    ("", r"(session_pool)", "",
     "gap: the adapter's requests session holds no connection; a prefill that drops keep-alive "
     "connections on restart would show a reused session"),
    ("", r"^self\._deferred_ack_poisoned_rooms\.discard", "",
     "gap: reused-room-abort-acked (configuration `deferred_release`) asks that the next request of a "
     "room poisoned by an unsettled send be acknowledged; this mutant still is there"),
    ("", r"(_staging_outstanding|_deferred_ack)", "",
     "gap: what a chunk still in flight leaves when its room's id is reused (the ACK targets held for "
     "it, its count of staged chunks outstanding), which the next request's opening status resets: the "
     "adapter's prefill (configuration `deferred_release`, `prefill.py`: upstream's transfer worker on an "
     "engine stand-in) finishes each chunk before a room is reused; with one still writing, upstream's "
     "worker would go on to conclude the next request's room, no behaviour a check may pin as correct"),
    ("", r"_notify_bootstrap", "",
     "gap: prefill-failure-told (configuration `prefill_complete`) asks that a room the prefill fails be "
     "told Failed to its decode, never ready; this mutant still tells it so there"),
    ("", r"(staging|_alloc\b)", "",
     "gap: staging (configuration `staging`, check staging-released: the ring in the register frame, a "
     "STAGING_REQ answered, the room's staging state released); this mutant keeps all three there"),
    ("", r"^return t$", "",
     "gap: the thread it returns is what mooncake's teardown joins; the adapter stops and joins the loop "
     "itself and never runs that teardown"),
    ("", r"daemon=True", "",
     "gap: the simulation's threads-alive asks that the heartbeat's thread be a daemon; this mutant "
     "keeps it one"),
    ("delete a statement", r"^self\._background_tasks\.add\(cleanup_task\)$", "",
     "gap, latent in this release: the cleanup awaits `asyncio.sleep`, whose timer keeps the task "
     "alive (revert-33048 is `latent`)"),
    ("", r"(_runner\.cleanup\(\)|_loop\.close\(\))", "",
     "gap: closed-server-releases-port (task-refs) asks that close() free the port and close the loop; "
     "this mutant still does both in the scenario"),
    ("", r"(is_dummy|target_tp_rank == self\.target_tp_rank|self\.target_tp_rank is None)", "",
     "gap: the MLA backend's dummy ranks (configuration `mla`, check mla-one-rank-asked: one of four "
     "prefill ranks asked for the pages); this mutant still asks one there"),
    ("is -> ==", r"is bootstrap_infos:$", "",
     "gap: equal is not identical (wrong fix `equal_not_identical`): the simulation catches it "
     "(`invalidate-own-only`, on upstream too), a deep check this quick judge leaves out"),
    ("", r"^assert len\(self\.bootstrap_infos\) > 0$", "",
     _NO_RANKS),
    ("", r"(decode_prefix_len or 0|state_dim_per_tensor|^else 0$)", "",
     "gap: a register or metadata frame the relay does not hand on (prefix length, state dims, "
     "item length of a pool with no contiguous KV): no lesson reads it"),
    ("", r"^self\.kv_mgr\.update_status\(self\.bootstrap_room, KVPoll\.Failed\)$", r"^except zmq\.ZMQError:$",
     "gap: the manager's status after a send failure; the reference leaves it to the receiver's "
     "latch (`_fail_send`), so failure-recorded does not ask it there"),
    ("", r"", r"^if self\.bootstrap_infos is None:$",
     "gap: send_metadata on a receiver whose fetch failed (send-after-failed-init drives it): the failed "
     "fetch already recorded the failure and wrote Failed, so without this repeat only the recorded "
     "reason's wording differs, which no check may ask"),
    ("", r"", r"^if not self\.bootstrap_infos:$",
     _NO_RANKS),
    ("delete a statement", r"^return$", r"^(except zmq\.ZMQError:|\):)$",
     "gap: send-failure-stops-sends (stale-bootstrap) asks that no rank get the metadata after a failed "
     "send; this mutant still stops there in the scenario"),
    ("delete a statement", r"^return$", r"^if current == KVPoll\.Failed:$",
     "gap: Failed is terminal in 0.5.23 only; 0.5.19 and the reference let a later status lift it "
     "(max), so no default check may ask it; acked-abort-stays-failed (configuration "
     "`deferred_release`) asks it of a prefill that acknowledged the room's abort"),
    ("delete a statement", r"^self\.heartbeat_failures\.pop\(failed_bootstrap_addr, None\)$", "",
     "gap: a prefill re-registered after it was declared dead whose first probe misses; 0.5.23 starts "
     "it clean, 0.5.19 and the reference keep the count, so no check may ask it"),
    ("Lt -> LtE", r"elapsed < self\.kv_mgr\.waiting_timeout", "",
     "gap: the instant elapsed == timeout; a poll at exactly the timeout on virtual time would see it"),
)  # fmt: skip


def classify(operator: str, line: str, lesson: str, block: str = "", body: str = "") -> str:
    """`equivalent: why` or `gap: why` for a survivor that changed `line` (in the block
    headed `block`) with `operator`; `body`: a removed lock's first guarded statement."""
    if operator == "remove a lock":
        for pattern, why in UNCONTENDED:
            if re.search(pattern, body):
                return "equivalent: " + why
    for rules, prefix in ((EQUIVALENT, "equivalent: "), (GAPS, "")):
        for op, pattern, header, why in rules:
            if (
                (not op or op == operator)
                and re.search(pattern, line)
                and (not header or re.search(header, block))
            ):
                return prefix + why
    return f"gap: no check of {lesson} or the other lessons reads it"


def body_of(text: str, line: int) -> str:
    """The line after line `line` (1-based) of `text`, stripped: in a removed lock's
    mutant (`with ...:` made `if True:`), the first statement it guarded."""
    lines = text.splitlines()
    return lines[line].strip() if line < len(lines) else ""


def block_of(text: str, line: int) -> str:
    """The header of the block around line `line` (1-based) of `text`: the nearest line
    above it that is indented less and ends with `:`, stripped."""
    lines = text.splitlines()
    target = lines[line - 1]
    indent = len(target) - len(target.lstrip())
    for above in reversed(lines[: line - 1]):
        if above.rstrip().endswith(":") and len(above) - len(above.lstrip()) < indent:
            return above.strip()
    return ""
