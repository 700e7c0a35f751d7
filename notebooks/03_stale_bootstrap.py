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
# What you will do, in about an hour: read what upstream saw, draw the interleaving, call the
# receiver's methods yourself across a prefill restart, run a stream of requests on the buggy
# form and watch every request fail, read the fix as the real diff (ours and upstream's), see how
# the checks order two receivers and what the interleaving explorer finds without any ordering,
# run the fixed form, look at what the fix leaves open (including the reviewer's "slow, not
# dead" question), and write the fix yourself. Everything runs on the in-process mock transport;
# `--transport loopback` on the command line runs the same scenario with a real prefill process
# that is really killed and restarted.
#
# **Learning objectives.** By the end you can:
#
# 1. say why a decode's cached route outlives a restarted prefill (same key, `/health` keeps
#    answering, so nothing evicts it), and what every later request then does;
# 2. call `KVReceiver(...)`, `init()`, `send_metadata()`, `poll()` and `clear()` yourself and
#    read `connection_pool` between the calls;
# 3. explain *identity-safe* invalidation (`is`, not the key) and name the interleaving that
#    breaks a by-key invalidation;
# 4. read a two-lane counterexample trace from the interleaving explorer, and say what "holds
#    over all N interleavings" does and does not prove;
# 5. say what the fix leaves open: the first request after a restart still pays, sockets to
#    dead ports stay open, and a merely slow prefill costs one extra `/route` fetch.
#
# **In a reading group** (about an hour): sections 1 to 3 (20 min), 4 and 5 (15 min), 6 and 7
# (10 min), the exercises (15 min). Before each live cell there is a **Predict before you
# run** question: answer it aloud, then run the cell. Discussion questions and a recap are at
# the end.

# %%
import reference.buggy
import reference.fixed
from reference.lessons.stale_bootstrap import teaching as stale
from reference.teaching import diffs, exercises, explorer, plots, runs, sequences, sources, upstream_hunks
from reference.teaching.display import show

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
# the prefill is just slow, not dead? Section 8 answers it on the real components.

# %% [markdown]
# ## 2. The interleaving
#
# One prefill with two TP ranks; the decode sends one request at a time. After the third, the
# prefill restarts behind the same bootstrap address. (`00_tour` walks one request through
# every message, if you want the happy path first.)

# %%
show(plots.sequence_picture(sequences.interleaving("stale-bootstrap", "buggy")))

# %% [markdown]
# ### The components, by hand
#
# Before the scenario runs them for you, make the calls yourself. `stale.Bench` is a decode
# `KVManager` (its KV memory registered, its parallel info fetched: that is the first
# `GET /route`) and one prefill rank behind the bootstrap address `10.0.0.1:8998`, on the mock
# network. It prints what `connection_pool` holds (key: the rank ports), where the prefill
# listens now, and how many `GET /route` the decode has made. On this bench a send to a port
# nobody listens on fails at once (a fail-fast socket); the scenario in section 3 uses
# upstream's socket options, where it waits out the 300 s timeout instead.
#
# **Predict before you run:** after the first request, what does `connection_pool` hold, and
# how many `GET /route` calls will the decode have made?

# %%
bench = stale.Bench(reference.buggy)
receiver = reference.buggy.KVReceiver(bench.manager, stale.ADDR, 1)
receiver.init(0)  # GET /route for its rank, register KV memory there, cache the list
receiver.send_metadata([0, 1])  # "write your KV into my pages 0 and 1": the prefill does, at once
print(bench.look(receiver))
receiver.clear()

# %% [markdown]
# Now the prefill restarts behind the same address: its rank binds a new port.
#
# **Predict before you run:** the next receiver's `init()`: does it ask `/route` again? What
# does `poll()` say after `send_metadata()`?

# %%
bench.prefill.restart()
receiver = reference.buggy.KVReceiver(bench.manager, stale.ADDR, 2)
receiver.init(0)
receiver.send_metadata([0, 1])
print(bench.look(receiver))
receiver.clear()

# %% [markdown]
# **Predict before you run:** and the request after that one?

# %%
receiver = reference.buggy.KVReceiver(bench.manager, stale.ADDR, 3)
receiver.init(0)
receiver.send_metadata([0, 1])
print(bench.look(receiver))
receiver.clear()

# %% [markdown]
# The entry never leaves the pool: every request from now on takes the dead port from the
# cache, and the decode never asks `/route` again. The same calls on the fixed form:
#
# **Predict before you run:** which request fails on the fixed form, and what does the pool
# hold after it?

# %%
bench = stale.Bench(reference.fixed)
for room in (1, 2, 3):
    if room == 2:
        bench.prefill.restart()
    receiver = reference.fixed.KVReceiver(bench.manager, stale.ADDR, room)
    receiver.init(0)
    receiver.send_metadata([0, 1])
    print(bench.look(receiver))
    receiver.clear()

# %% [markdown]
# ## 3. The buggy form, live
#
# The lesson's scenario (`reference/lessons/stale_bootstrap/scenario.py`) sends 3 requests, restarts
# the prefill (its ranks bind new ports, the bootstrap server answers `/health` throughout),
# then sends 5 more. The heartbeat probes `/health` every 5 s of virtual time (at least once per
# request) and never misses.
# Each request's KV bytes are compared with what the prefill sent. The verdict comes from what
# the requests did. Command line: `python -m reference --lesson stale-bootstrap --variant buggy`.
#
# **Predict before you run:** of the 5 requests after the restart, how many succeed on the
# buggy form? How many heartbeat probes miss?

# %%
buggy = runs.run("stale-bootstrap", "buggy")
print(runs.verdict_line(buggy, also=False))
show(
    {
        key: buggy.details[key]
        for key in ("heartbeat_misses", "route_fetches_after", "stale_ports", "first_failure")
    }
)

# %% [markdown]
# The heartbeat never missed a probe, so nothing ever evicted the cache entry; the decode did
# not call `/route` once after the restart, and every request went to ports nobody listens on.
#
# The same stream, shorter (one request, the restart, two more), in virtual seconds, with every
# heartbeat probe marked: with upstream's socket options a send to a dead port is queued
# silently, so each stale request waits out the 300 s timeout while the heartbeat keeps
# getting answers.
#
# **Predict before you run:** on the fixed form, how long does the first request after the
# restart wait, and the second?

# %%
timelines = [stale.restart_timeline(form) for form in (reference.buggy, reference.fixed)]
show(
    plots.timeline_picture(
        [result for result, _, _ in timelines],
        "One request, a prefill restart, two more: what each waited for, in virtual seconds",
        spans={result.variant: spans for result, spans, _ in timelines},
        ticks={result.variant: probes for result, _, probes in timelines},
        tick_label="heartbeat probe (every 5 s), all answered",
        event_lines=("prefill restart",),
    )
)

# %% [markdown]
# ## 4. Write the fix yourself
#
# You have seen the symptom; write the fix before you read it (section 5 shows it). The next cell is
# the fixed receiver with its invalidation emptied (the whole fix spans five methods;
# this exercise is its heart: which cached entry to drop), as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson stale-bootstrap --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
#
# What you have to work with: `self.kv_mgr.connection_pool` is the cache shared by every receiver
# of this decode (key -> the list of a prefill's rank addresses), guarded by
# `self.kv_mgr.connection_lock`; `self._connection_pool_entries` maps each key this receiver
# used to the very list object it took from (or put into) the pool. The fixed form already
# calls `invalidate_cached_bootstrap_infos()` on every failure path; what it drops is yours.
#
# To work in your editor instead, copy the template `notebooks/exercises/my_fix` (a package that
# holds the buggy form of every component a lesson touches; `notebooks/README.md` explains it),
# edit its `receiver.py`, and run `.venv/bin/python -m reference --lesson stale-bootstrap --impl=PATH` or
# `.venv/bin/python -m pytest --impl=PATH -m "lesson(id='stale-bootstrap')"` from the checkout.
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
show(exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": KVReceiver})))

# %% [markdown]
# ## 5. The fix, as the real diff
#
# `reference/buggy/receiver.py` and `reference/fixed/receiver.py` hold exactly the methods
# [PR #36029](https://github.com/sgl-project/sglang/pull/36029) changed, with the same line structure, so their diff is the fix:

# %%
show(diffs.fix_diff("stale-bootstrap"))

# %% [markdown]
# Section 2's interleaving, on the fixed form:

# %%
show(plots.sequence_picture(sequences.interleaving("stale-bootstrap", "fixed")))

# %% [markdown]
# The heart of it is one method, `_setup_bootstrap_infos` (where a receiver takes its ranks'
# addresses from the pool or fills it), here whole, before and after:

# %%
show(sources.before_after("KVReceiver", "_setup_bootstrap_infos"))

# %% [markdown]
# and the method the fix added, which every failure path now calls:

# %%
show(sources.source(reference.fixed.KVReceiver.invalidate_cached_bootstrap_infos))

# %% [markdown]
# **Upstream's own hunk**, beside ours: the same methods read from sglang's released code,
# 0.5.18 (the last release without [PR #36029](https://github.com/sgl-project/sglang/pull/36029))
# against 0.5.19 (the first with it), from the wheels in `.cache/sglang/`
# (`bash ci/upstream.sh --fetch-only` fetches them; without them the cell prints one line
# saying so). The moves are the ones in our diff: the locked `get`, recording the generation
# in `_connection_pool_entries`, `invalidate_cached_bootstrap_infos` on each failure path,
# `setdefault` to adopt a concurrent winner, the `connect` moved into the `try`. The
# staging-slot lines the same release added to `_register_kv_args` are another change, not
# about the pool: the cell leaves them out and says so.

# %%
show(upstream_hunks.upstream_hunks("stale-bootstrap"))

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
# ## 6. Ordering two receivers: scripted, then explored
#
# The scenario sends one request at a time. The fix's identity check matters only when
# **two receivers share one cache entry**, and the checklist orders them deterministically
# without a hook inside the receiver: a step is scripted at a call every receiver makes
# through its transport (`GET /route`, `connect`, a delivery) and runs there, on the caller's
# thread, as another thread could at that instant. Here is the real code: a second receiver
# fills the same key while the first is in the middle of its `GET /route`:

# %%
show(stale.interleaving_source())

# %% [markdown]
# A script tells one story. The **interleaving explorer** (`python -m reference --explore`,
# [reference/explore/README.md](../reference/explore/README.md)) runs the receivers on real
# threads with no script at all, and frontrun's DPOR tries every ordering of their accesses to
# shared state. Property `hit-vs-eviction`: a receiver's `init()` finds the key cached while the
# heartbeat evicts that prefill (`_handle_node_failure`).
#
# **Predict before you run:** the buggy `_setup_bootstrap_infos` checks `key not in
# connection_pool` and then reads `connection_pool[key]`, without the lock. What can go wrong
# if the eviction runs between the two lines?

# %%
show(explorer.explore("stale-bootstrap", "hit-vs-eviction"))

# %% [markdown]
# Read the trace column by column: the receiver (T0) is switched out (`||`) right before line
# 43 completes, the heartbeat (T1) deletes the key (`del self.connection_pool[...]`, marked `*`
# as a mutation), and the receiver's index then raises `KeyError` on its thread (upstream: the
# scheduler's).
# The fixed form looks the key up once, under `connection_lock`, and holds over every
# interleaving the explorer ran. That is a statement about this small world (two threads, one
# key), not a proof. The count is this run's own: frontrun's DPOR gives 50 on a quiet machine
# and has given more under load (95 once), never a different verdict.
#
# Property `stale-generation-replaced` is the identity check itself: after a restart, a new
# request installs the next generation while a second holder of the old one fails. Here also
# against the by-key wrong fix from section 10 (`wrong_fixes/by_key.py`).
#
# **Predict before you run:** which of the three keeps the new generation cached?

# %%
show(
    explorer.explore(
        "stale-bootstrap",
        "stale-generation-replaced",
        impls=["reference.lessons.stale_bootstrap.wrong_fixes.by_key"],
        traces=False,
    )
)

# %% [markdown]
# ## 7. The fixed form, live
#
# **Predict before you run:** the same 5 requests after the restart on the fixed form: how many
# fail, and how many `GET /route` calls does the decode make after the restart (two ranks)?

# %%
fixed = runs.run("stale-bootstrap", "fixed")
print(runs.verdict_line(fixed))

# %%
show(
    plots.outcome_picture(
        [buggy, fixed],
        "The same request stream on both forms (ports each request used, under it)",
        caption=stale.ports_of,
    )
)

# %% [markdown]
# One request per cache key still fails after the restart: it is the one that discovers the
# ports are stale. From then on the fixed form fetches `/route` once per rank, re-registers its
# KV memory with the new process, and every request succeeds with verified bytes.

# %% [markdown]
# ## 8. What the fix leaves open
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
# `reference/lessons/stale_bootstrap/slow_prefill.py` delays one request's answers past the 300 s timeout.
#
# **Predict before you run:** on the fixed form, what does the slow request cost the requests
# after it?

# %%
print(stale.all_forms(stale.slow_prefill))

# %% [markdown]
# The slow request fails in both forms (that is the timeout's job); the fixed form then pays
# one `GET /route` per rank and one idempotent re-registration, and nothing fails after. The
# late answers arrive for a room already cleared and are dropped.

# %% [markdown]
# ## 9. Exercise
#
# Predict, then check. The checker runs the race live on the buggy form, the fixed form, and a
# tempting wrong fix that invalidates by key.

# %%
print(stale.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b" or "c"

# %%
show(stale.check_exercise(ANSWER))

# %% [markdown]
# ## 10. Tempting wrong fixes
#
# Your own fix was judged in section 4, before the answer; now the fixes that look right and are not.
#
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
show(exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": ByKeyKVReceiver})))

# %% [markdown]
# Rejected by `replacement-survives` (the story alone passes it; 6 of 7 checks do): a receiver that fails late, still holding the pre-restart
# generation, drops the *new* generation another receiver installed meanwhile. Identity
# (`is`), not the key, says which entry is stale.

# %% [markdown]
# ### Another tempting wrong fix
#
# "A cache miss only costs a `/route` fetch": on any failure, empty the whole pool. (It is
# `clear_pool` in the gallery.)
#
# **Predict before you run:** this one also drops the new generation in the race above. Which
# other check do you expect to name it?


# %%
# EXERCISE: another tempting wrong fix, to run and see rejected: empty the whole pool
class ClearPoolKVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            self.kv_mgr.connection_pool.clear()
        self._connection_pool_entries.clear()


# %%
show(exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": ClearPoolKVReceiver})))

# %% [markdown]
# `other-prefill-survives` names the cost: a failure on one prefill throws away every other
# prefill's entries too, and each of them then pays a `/route` fetch and a re-registration on
# its next request. A fix must drop exactly what failed: this receiver's entries, and only
# while they are still the cached objects.

# %% [markdown]
# ## Discussion questions
#
# 1. The heartbeat probes `/health` on the bootstrap server, not the ranks. What would a probe
#    have to check to notice a restart behind the same address? (Upstream's proposals:
#    [#34289](https://github.com/sgl-project/sglang/pull/34289),
#    [#31188](https://github.com/sgl-project/sglang/pull/31188).)
# 2. The fix is reactive: one request per cache key pays for the discovery. When is that
#    acceptable, and when would you rather pay a `/route` fetch on every request?
# 3. Why must invalidation compare identity (`is`) and not equality (`==`)? Could two
#    generations ever compare equal?
# 4. The explorer says "holds over all N interleavings". What is outside that statement
#    (more threads, more keys, C calls that release the GIL, the loopback transport)?
# 5. Invalidating on the waiting timeout punishes a slow prefill with one extra fetch. Is
#    there a signal that tells "slow" from "restarted" without a new protocol field?
#
# ## Recap
#
# - A decode caches each prefill's rank addresses under a key that survives a restart behind
#   the same address; `/health` keeps answering, so before the fix nothing evicts the stale
#   entry and every later request fails.
# - The fix records the exact list object each receiver used and drops it on a failed fetch,
#   registration, send or waiting timeout, **only if the pool still holds that object**; the
#   next request re-fetches `/route` and re-registers.
# - The checklist orders receivers at their transport calls; the explorer checks the same
#   properties over every interleaving of real threads (a `KeyError` on the buggy form's
#   unlocked lookup, the new generation kept on the fixed form, lost by a by-key fix).
# - Still open: the first request after a restart pays; sockets to dead ports stay open; a
#   slow prefill costs a re-fetch.
#
# ## Going further
#
# - `python -m reference --lesson stale-bootstrap --transport loopback` runs the scenario with a
#   real prefill process, real ZMQ sockets and a real aiohttp bootstrap server on 127.0.0.1.
# - `tests/test_stale_bootstrap_pool.py` writes upstream's five connection-pool tests fresh and runs
#   each on both forms; `tests/test_stale_bootstrap_stress.py` races 8 threads over one key.
