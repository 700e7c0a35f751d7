"""Why a mutant of upstream's code survives: equivalent, or a gap with the check it needs.

`classify(operator, line, target)` reads what the mutant changed (its operator and the
source line it changed, the same in every release that has the line) and answers
either `equivalent: <why no execution can tell it apart>` or `gap: <what would catch
it>`. Only survivors are classified (`mutate.summarize`): a rule never turns a kill
into anything. An equivalent survivor is left out of the kill rate; a gap is not.
"""

from __future__ import annotations

import re

_SMALL = "CPython keeps one object per small int (-5..256) and one None: `==` and `is` agree"

# (operator, or "" for any; a regular expression the changed line must match; why).
EQUIVALENT: tuple[tuple[str, str, str], ...] = (
    ("delete a statement", r'^"""', "a docstring"),
    ("", r"^logger\.", "logging only: the call's arguments and result reach only the log"),
    ("delete a statement", r'^f"', "a log message's text"),
    ("== -> is", r"(== KVPoll\.|== None|== 200\b|target_tp_rank == self\.target_tp_rank)",
     f"upstream's statuses, ranks and HTTP 200 are small ints: {_SMALL}"),
    ("is -> ==", r"is (not )?None\b", f"None is a singleton: {_SMALL}"),
    ("delete a statement", r"^affected_rooms\.append\(room\)$",
     "the list is local and read only by the log line's count"),
    ("delete a statement", r"^session = None$",
     "a dead store: `session` is assigned before every read and never read after the try"),
    ("int + 1", r"^self\.heartbeat_failures\.get\(bootstrap_addr, 0\)$",
     "the default is never used: both branches before this read set the address's count"),
    ("", r"(getEffectiveLevel\(\) <= logging\.DEBUG|^access_log = self\.app\.logger$)",
     "it only picks aiohttp's access logger (log output)"),
)  # fmt: skip

# (operator, or ""; a regular expression on the changed line; the gap and what would catch it).
GAPS: tuple[tuple[str, str, str], ...] = (
    ("remove a lock", r"",
     "gap: the default run scripts one interleaving (hooks), so a removed lock is never contended; "
     "an exploration over the locked section (`--sglang --explore`, not run per mutant) would be"),
    ("", r"(_send_abort_notification|abort_notified|ensure_abort_notified|bootstrap_infos is not None$)",
     "gap: abort-reaches-prefill would catch it, once the adapter's relay (`receiver.MooncakeWire`) "
     "hands upstream's 4-frame ABORT to the prefill; `late_abort`'s receivers have no bootstrap infos"),
    ("", r"(disconnect_endpoint|^ip = info|^port = info|^if ip and port|^na = NetworkAddress|"
         r"^stale_endpoints\.add)",
     "gap: failed-prefill-disconnected would catch it; upstream's socket cache is keyed by the "
     "relay's 127.0.0.1 endpoint, so `disconnect_endpoint(rank endpoint)` finds nothing (adapter)"),
    ("delete a statement", r"^self\.conclude_state = KVPoll\.Failed$",
     "gap: the latch matters only when a late Success lands before the scheduler's first poll; "
     "hardened leaves a failed fetch unlatched on purpose (it retries), so failure-recorded cannot ask it"),
    ("", r"(timeout=\(2, 3\))",
     "gap: a /health answering after 2 to 3 s; the adapter's probe answers at once"),
    ("", r"(session_pool)",
     "gap: the adapter's requests session holds no connection; a prefill that drops keep-alive "
     "connections on restart would show a reused session"),
    ("", r"(heartbeat_failures\[bootstrap_addr\] = \($|heartbeat_failures\.get\(bootstrap_addr, 0\) \+ 1)",
     "gap: the non-200 branch; the adapter's /health answers 200 or refuses, never an error status"),
    ("", r"(staging|_staging_outstanding|_deferred_ack|_notify_bootstrap)",
     "gap: staging and deferred-ACK state (0.5.23): off in the adapter (`enable_staging` False), "
     "no lesson drives it"),
    ("", r"(daemon=True|^return t$)",
     "gap: interpreter exit with the heartbeat running; the scenarios stop the loop themselves"),
    ("delete a statement", r"^self\._background_tasks\.add\(cleanup_task\)$",
     "gap, latent in this release: the cleanup awaits `asyncio.sleep`, whose timer keeps the task "
     "alive (revert-33048 is `latent`)"),
    ("", r"(_runner\.cleanup\(\)|_loop\.close\(\)|set_event_loop)",
     "gap: closed-server-releases-port (the port free again after close()) would catch it"),
)  # fmt: skip


def classify(operator: str, line: str, lesson: str) -> str:
    """`equivalent: why` or `gap: why` for a survivor that changed `line` with `operator`."""
    for rules, prefix in ((EQUIVALENT, "equivalent: "), (GAPS, "")):
        for op, pattern, why in rules:
            if (not op or op == operator) and re.search(pattern, line):
                return prefix + why
    return f"gap: no check of {lesson} or the other lessons reads it"
