# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 3: a restarted prefill's new ports are never re-fetched
#
# Lesson id `stale-bootstrap` · upstream fix: sglang [PR #36029](https://github.com/sgl-project/sglang/pull/36029) (first released in [sglang 0.5.19](https://pypi.org/project/sglang/0.5.19/))
# · component: the decode-side KV receiver and its `connection_pool` cache.
#
# What you will do, in about an hour: read what upstream saw, draw the interleaving, run a
# stream of requests across a prefill restart on the buggy form and watch every request fail,
# read the fix as the real diff, run the fixed form, look at what the fix leaves open (including
# the reviewer's "slow, not dead" question), and answer one question. Everything runs on the
# in-process mock transport; `--transport loopback` on the command line runs the same scenario
# with a real prefill process that is really killed and restarted.

# %%
from reference.lessons.stale_bootstrap import teaching as stale
from reference.teaching import diffs, exercises, plots, runs, sequences

# %% [markdown]
# ## 1. The story
#
# A decode instance learns where a prefill's ranks listen by asking the prefill's **bootstrap
# server** (`GET /route`): each rank answers with `{rank_ip, rank_port}`, where `rank_port` is
# the random port its ZMQ PULL socket got at start-up. The decode caches that list in
# `connection_pool`, keyed by `"{bootstrap_addr}_{dp}_{cp}_{tp}"`, registers its KV memory with
# each rank once, and from then on every request to that prefill reuses the cached list.
#
# **[PR #36029](https://github.com/sgl-project/sglang/pull/36029)** ("refresh stale prefill bootstrap metadata",
# <https://github.com/sgl-project/sglang/pull/36029>) starts from what happens when the
# prefill **restarts behind the same bootstrap address**: a quick process restart, or a
# Kubernetes Service in front of it. The
# bootstrap server comes back at the same `host:port`, so `/health` keeps answering and the
# heartbeat never declares the prefill dead; but every rank's PULL port is new. The decode's key
# has not changed, so it keeps the old list: it never calls `/route` again and never registers
# with the new ranks. Every later request sends its metadata to dead ports, where the send times
# out (1 s since [PR #31144](https://github.com/sgl-project/sglang/pull/31144); unbounded before) or the request waits out its 300 s timeout. Nothing
# ever evicts the entry: it lasts until the decode itself restarts. [PR #31144](https://github.com/sgl-project/sglang/pull/31144) had bounded those
# sends, but, as the report says, the stale generation stayed in the cache.
#
# The fix makes each receiver remember exactly which cached list objects it used, and drop them
# when the route fetch fails, when registering its KV memory fails, when `send_metadata` hits a
# ZMQ error, or when its waiting timeout fires. The next request fetches `/route` again and
# re-registers. The drop is **identity-safe**: a list is deleted only if the pool still holds
# *that very object* (`is`, not `==`), so a newer generation that another receiver installed
# meanwhile survives. The PR added CPU unit tests for the invalidation (`test_receiver_connection_pool.py`).
# Checked on the real wheels: with the route moved from port 1001 to 2001 and the timeout
# fired, 0.5.18 keeps the key and the next receiver uses 1001 without fetching; 0.5.19 empties
# the pool and the next receiver fetches once and uses 2001.
#
# In the discussion of [PR #36029](https://github.com/sgl-project/sglang/pull/36029) a reviewer asked about invalidating on the waiting timeout: what if
# the prefill is just slow, not dead? Section 6 answers it on the real components.

# %% [markdown]
# ## 2. The interleaving
#
# One prefill with two TP ranks; the decode sends one request at a time. After the third, the
# prefill restarts behind the same bootstrap address. (`00_tour` walks one request through
# every message, if you want the happy path first.)

# %%
plots.sequence_picture(sequences.interleaving("stale-bootstrap", "buggy"))

# %%
plots.sequence_picture(sequences.interleaving("stale-bootstrap", "fixed"))

# %% [markdown]
# ## 3. The buggy form, live
#
# The lesson's scenario (`reference/lessons/stale_bootstrap/scenario.py`) sends 3 requests, restarts
# the prefill (its ranks bind new ports, the bootstrap server answers `/health` throughout),
# then sends 5 more. The heartbeat probes once per request on a virtual clock and never misses.
# Each request's KV bytes are compared with what the prefill sent. The verdict comes from what
# the requests did. Command line: `python -m reference --lesson stale-bootstrap --variant buggy`.

# %%
buggy = runs.run("stale-bootstrap", "buggy")
print(runs.verdict_line(buggy))
{
    key: buggy.details[key]
    for key in ("heartbeat_misses", "route_fetches_after", "stale_ports", "first_failure")
}

# %% [markdown]
# The heartbeat never missed a probe, so nothing ever evicted the cache entry; the decode did
# not call `/route` once after the restart, and every request went to ports nobody listens on.

# %% [markdown]
# ## 4. The fix, as the real diff
#
# `reference/buggy/receiver.py` and `reference/fixed/receiver.py` hold exactly the methods
# [PR #36029](https://github.com/sgl-project/sglang/pull/36029) changed, with the same line structure, so their diff is the fix:

# %%
diffs.fix_diff("stale-bootstrap")

# %% [markdown]
# Three ideas, in order of importance:
#
# 1. **Record what you used.** `_connection_pool_entries` maps each key to the exact list
#    object this receiver took from (or put into) the pool.
# 2. **Drop it when it fails you**: on a failed fetch, a failed registration, a failed send,
#    or the waiting timeout. The next request then misses the cache and fetches `/route` again.
# 3. **Only if it is still the same object** (`is`): another receiver may already have
#    installed the next generation, and that one must survive. The lookup and the insert also
#    move under `connection_lock`; `setdefault` makes two receivers that fetch at the same
#    time agree on one list.
#
# The `connect` moving inside the `try` is a smaller fix: a connect that raises no longer
# escapes into the scheduler.

# %% [markdown]
# ## 5. The fixed form, live

# %%
fixed = runs.run("stale-bootstrap", "fixed")
print(runs.verdict_table([buggy, fixed]))

# %%
plots.outcome_picture(
    [buggy, fixed],
    "The same request stream on both forms (ports each request used, under it)",
    caption=stale.ports_of,
)

# %% [markdown]
# One request per cache key still fails after the restart: it is the one that discovers the
# ports are stale. From then on the fixed form fetches `/route` once per rank, re-registers its
# KV memory with the new process, and every request succeeds with verified bytes.

# %% [markdown]
# ## 6. What the fix leaves open
#
# **It is reactive.** The first request after a restart always pays: it waits for its send to
# time out (up to 1 s upstream) or, if the message was queued silently, for the 300 s waiting
# timeout. Detecting a replaced prefill up front was proposed separately upstream
# ([#34289](https://github.com/sgl-project/sglang/pull/34289), an instance-id header; [#31188](https://github.com/sgl-project/sglang/pull/31188), socket generations).
#
# **Stale sockets stay open.** Invalidation drops the cache entry, not the PUSH sockets to the
# dead ports (neither does upstream); they are only closed when the heartbeat declares the
# address dead, which a quick restart never triggers. The next cell restarts the prefill 3
# times, with one request before and two after each restart.
#
# **Predict before you run:** which form leaves more dead-port sockets behind, and is that the
# worse form?

# %%
print(stale.all_forms(stale.stale_sockets))

# %% [markdown]
# Fewer is not better here. The buggy form never learns the new ports, so it never opens a
# socket to a restarted prefill: one dead socket, and every request after the first restart
# fails. The fixed form reaches each new generation (one failed request, then successes) and
# leaves one socket per earlier generation behind: a slow leak of file descriptors that
# only the heartbeat's eviction would close.

# %% [markdown]
# **Slow, not dead.** The review question: if the prefill is merely slow and the waiting
# timeout fires, the fixed receiver invalidates a perfectly good entry. What does that cost?
# `reference/lessons/stale_bootstrap/slow_prefill.py` delays one request's answers past the 300 s timeout:

# %%
print(stale.all_forms(stale.slow_prefill))

# %% [markdown]
# The slow request fails in both forms (that is the timeout's job); the fixed form then pays
# one `GET /route` per rank and one idempotent re-registration, and nothing fails after. The
# late answers arrive for a room already cleared and are dropped.

# %% [markdown]
# ## 7. Exercise
#
# Predict, then check. The checker runs the race live on the buggy form, the fixed form, and a
# tempting wrong fix that invalidates by key.

# %%
print(stale.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b" or "c"

# %%
stale.check_exercise(ANSWER)

# %% [markdown]
# ## 8. Write the fix yourself
#
# The warm-up above asked for a prediction; now write the fix. The next cell is
# the fixed receiver with its invalidation emptied (the whole fix spans five methods;
# this exercise is its heart: which cached entry to drop), as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson stale-bootstrap --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
#
# **Predict before you run:** as committed (nothing is ever invalidated), how many requests
# succeed after the restart?

# %%
# EXERCISE: drop the cached entry this receiver used, and only that one (as committed: none)
import reference.fixed


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        self._connection_pool_entries.clear()


# %%
exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": KVReceiver}))

# %% [markdown]
# ### A tempting wrong fix
#
# Drop every key this receiver used from `connection_pool`, under the lock: "the stale
# entry is gone, the next request re-fetches". (It is `by_key` in the lesson's gallery of
# wrong fixes.) Run it as written.
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: invalidate by key
class ByKeyKVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key in self._connection_pool_entries:
                self.kv_mgr.connection_pool.pop(key, None)
        self._connection_pool_entries.clear()


# %%
exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": ByKeyKVReceiver}))

# %% [markdown]
# Rejected by `replacement-survives` (the story alone passes it; 14 of 15 checks do): a receiver that fails late, still holding the pre-restart
# generation, drops the *new* generation another receiver installed meanwhile. Identity
# (`is`), not the key, says which entry is stale.

# %% [markdown]
# ## Going further
#
# - `python -m reference --lesson stale-bootstrap --transport loopback` runs the scenario with a
#   real prefill process, real ZMQ sockets and a real aiohttp bootstrap server on 127.0.0.1.
# - `tests/test_stale_bootstrap_pool.py` writes upstream's five connection-pool tests fresh and runs
#   each on both forms; `tests/test_stale_bootstrap_stress.py` races 8 threads over one key.
