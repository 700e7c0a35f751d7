"""The checklist of lesson `stale-bootstrap`: what PR #36029 guarantees, one check each.

Read from the PR's hunks (`CommonKVReceiver` in `disaggregation/common/conn.py`, and
the mooncake, mori and nixl `send_metadata`) and its description. Each check runs on
the mock transport against any variant, through the variant protocol only; the
scenarios are in `checks_triggers.py` and `checks_sharing.py`, their world in
`check_world.py` and `scripted.py`. What the simulation's invariants state over generated
workloads and faults (a failed send or waiting timeout drops its entry, the next request
re-fetches; the ABORTs a timeout sends, an abort's latch, a dead prefill's disconnects, a
send that stops at a refused rank) is asked here only where the simulation cannot reach:
a send error through upstream's own receiver (`failure-recorded`'s send path, fail-fast
sockets). The lesson's README has both tables.
"""

from __future__ import annotations

from reference.harness.checks import Check, deferred
from reference.lessons.stale_bootstrap import checks_sharing as sharing
from reference.lessons.stale_bootstrap import checks_triggers as triggers

PR = "https://github.com/sgl-project/sglang/pull/36029"
HUNKS = f"{PR}/files"
CONFIGURED = "reference.upstream.configured.stale_bootstrap"  # bodies of the configured checks

CHECKS = (
    Check(
        "other-prefill-survives",
        "a failure on one prefill leaves another prefill's cache entries and costs it no fetch",
        f'PR description: "remove only entries that still match that generation" ({PR})',
        sharing.other_prefill_survives,
    ),
    Check(
        "replacement-survives",
        "a late failure on the pre-restart entry never drops the new generation another receiver installed",
        f'PR description: "Preserve a replacement generation installed by another receiver" ({PR})',
        sharing.replacement_survives,
    ),
    Check(
        "concurrent-fill-adopts",
        "two receivers filling one key end on one generation: whichever fails later, no stale entry stays",
        f"_setup_bootstrap_infos hunk: setdefault under connection_lock, the winner's object recorded "
        f"({HUNKS})",
        sharing.concurrent_fill_adopts,
    ),
    Check(
        "registered-before-cached",
        "an entry another receiver can find is one this decode already registered with",
        f"_setup_bootstrap_infos hunk: register, invalidate on failure, only then setdefault ({HUNKS})",
        sharing.registered_before_cached,
    ),
    Check(
        "success-keeps-cache",
        "a request that succeeds leaves every entry it used cached: the next one fetches nothing",
        f'PR description: "The happy path adds only short lock-protected cache lookup and insertion '
        f'operations" ({PR})',
        sharing.success_keeps_cache,
    ),
    Check(
        "failure-recorded",
        "a request failed by a fetch (also on CP rank 1 after rank 0 was filled), a registration, a send, "
        "its waiting timeout or a connect that raises leaves no entry naming a port it failed on cached, "
        "nothing escapes to the caller, and it carries its recorded reason",
        f'PR description: "On registration failure, metadata-send failure, or waiting timeout, remove only '
        f"entries that still match\"; each failure path of the PR's hunks: invalidate, record_failure, "
        f"update_status(Failed); _register_kv_args and send_metadata: the connect moved inside the try "
        f"({HUNKS})",
        triggers.failure_recorded,
    ),
    # In a named configuration of upstream's decode (reference/upstream/configs.py); our
    # forms model neither MLA nor staging, so only a variant offering it runs these. Their
    # bodies live with the configurations (reference/upstream/configured).
    Check(
        "mla-one-rank-asked",
        "an MLA decode asks one of its prefill TP ranks for the pages; the others get a dummy metadata frame",
        f"_setup_bootstrap_infos hunk, the MLA branch of the fetch loop: is_dummy for every target rank but "
        f"target_tp_rank ({HUNKS})",
        deferred(CONFIGURED, "mla_one_rank_asked"),
        configuration="mla",
    ),
    Check(
        "staging-released",
        "a staged request's STAGING_REQ is answered, and its staging state is released once it ended",
        f"mooncake send_metadata hunk: chunk_staging_infos reset, register_staging_room_bootstrap before "
        f"the sends ({HUNKS})",
        deferred(CONFIGURED, "staging_released"),
        configuration="staging",
    ),
)
