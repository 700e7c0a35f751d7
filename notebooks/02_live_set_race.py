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
# # Lesson 2: iterating a live set outside its lock kills the heartbeat
#
# Lesson id `live-set-race` · upstream fix: sglang [PR #36351](https://github.com/sgl-project/sglang/pull/36351) (first released in [sglang 0.5.19](https://pypi.org/project/sglang/0.5.19/))
# · component: the decode-side status manager, `_handle_node_failure`.
#
# What you will do, in about an hour: read what upstream saw, draw the interleaving, read the
# real hook code that places it, make the failing calls yourself on the real manager, run the
# buggy form and catch the exception that kills the heartbeat thread, read the fix as our diff
# and as upstream's own hunk, run the fixed form, let the explorer try every interleaving,
# measure how often the race fires without help, look at what the fix leaves open, and write
# the fix yourself. Everything runs the reference components in `reference/` on the in-process
# mock transport, with a virtual clock: the 5 s heartbeat runs in microseconds.
#
# **Learning objectives.** After this lesson you can
#
# 1. explain why iterating a container after releasing the lock that guards it is unsafe even
#    when the container was popped from the shared table;
# 2. place a race deterministically with two hook points (park one thread, release it from
#    the other) and read the real code that does it;
# 3. tell a thread that *dies* (failure detection gone for good) from a call that fails once,
#    and see it on a timeline;
# 4. read upstream's one-call fix in the sglang releases themselves, and check it with the
#    explorer over every interleaving of the two threads;
# 5. reject a tempting wrong fix (popping the set) by what a check and the explorer observe.
#
# Each live cell is preceded by a **Predict before you run** question: answer it before
# running the cell. The discussion questions and a recap are at the end.

# %%
import reference.buggy
import reference.fixed
from reference.hooks import Hooks
from reference.lessons.live_set_race import teaching as live_set
from reference.lessons.live_set_race.scenario import StatusThreadCleanup
from reference.status import KVPoll
from reference.teaching import diffs, exercises, plots, runs, sequences, sources, upstream_hunks
from reference.teaching.display import show
from reference.transport.mock import MockNetwork

# %% [markdown]
# ## 1. The story
#
# A decode instance must notice when a prefill instance dies, or its requests wait forever for
# KV caches that will never come. In sglang the decode KV manager (mooncake and nixl backends)
# runs a **heartbeat thread**: every 5 s it sends `GET /health` to each known prefill's
# bootstrap server; after 2 consecutive failures it calls `_handle_node_failure(addr)`, which
#
# 1. under `connection_lock`: drops that prefill's cached connection entries and its entry in
#    the prefill table, and takes the set of rooms waiting on it from `addr_to_rooms_tracker`,
#    then pops that set from the tracker;
# 2. after releasing the lock: disconnects the stale endpoints and marks each affected room
#    Failed (unless it already succeeded).
#
# Two upstream details make this fragile. The call is **not inside a try**, so anything it
# raises ends the heartbeat thread for good. And in step 1 the rooms were taken with
# `tracker.get(addr)`: the *live set object*, not a copy, iterated in step 2 after the lock is
# gone.
#
# **[PR #36351](https://github.com/sgl-project/sglang/pull/36351)** points out
# that this is safe only as long as every other code path that mutates those sets behaves. Its
# author walked through all of them: code that re-indexes `tracker[addr]` gets a fresh set once
# the handler has popped the old one, and mooncake's pruning iterates a copy under the lock. But
# mori's `_cleanup_room_tracking`, run by mori's status thread when a room finishes, **keeps a
# reference** to the set and discards from it **without the lock**. If it fetched the set before
# the handler popped it and discards while the handler iterates, Python raises
# `RuntimeError: Set changed size during iteration` in the heartbeat thread. The thread dies;
# rooms after the current one are never failed; and no later prefill failure is ever detected.
#
# The PR calls itself hardening rather than the fix of a seen crash: today only mooncake and
# nixl start the heartbeat, while mori is one line away from doing so. The fix is one call,
# `list(...)`, taken inside the lock. No unit test was added ("a timing-dependent race cannot be
# tested deterministically"); the PR gives reproduction numbers instead. Checked on the real
# wheels: 0.5.18 raised the RuntimeError and failed only 1 of 3 rooms; 0.5.19 failed all 3.
# Below, a hook point makes the interleaving certain, so it can be tested.

# %% [markdown]
# ## 2. The interleaving
#
# Rooms 1, 2, 3 wait on the prefill; room 4 has just finished, so mori's status thread is
# cleaning its tracking. The scenario parks that thread right after it fetched the set (hook
# `cleanup_room_tracking.after_get`) and lets it go on from inside the handler's loop, after the
# first room (hook `node_failure.after_room`): the one moment when a discard breaks the loop.

# %%
show(plots.sequence_picture(sequences.interleaving("live-set-race", "buggy")))

# %% [markdown]
# ### The hook placement: the real code
#
# Three pieces, read from the files now. Mori-style cleanup (`_cleanup_room_tracking`, shared
# by every form in `reference/common/manager.py`) fires `cleanup_room_tracking.after_get` right
# after it fetched the live set. `StatusThreadCleanup` runs that cleanup on its own thread and
# parks it in that hook (`_park`) until `release_once` lets it go; `release_once` is what the
# scenario installs on `node_failure.after_room`, which the handler fires after each room
# (see the method in section 5), so the discard happens inside the handler's loop, after the
# first room. `_observe` is the scenario itself: where the hooks are set, the kills, and the
# virtual time it advances. Every wait is bounded (`BOUND`, 5 s), so a form that never reaches
# a hook gives a clear timeout, not a hang.

# %%
show(live_set.ordering_source())

# %% [markdown]
# ### The same interleaving, by hand
#
# The calls the scenario makes, made here on the real buggy `KVManager`: a prefill at
# `10.0.0.1:8998`, rooms 1-3 waiting on it, room 4 done; mori's status thread starts cleaning
# room 4 and parks; the hook releases it after the handler's first room; then this cell calls
# `_handle_node_failure` as the heartbeat thread would (`live_set.call` shows what it raised
# instead of letting it stop the notebook).
#
# **Predict before you run:** what does the handler call end with, and which of rooms 1, 2, 3
# are Failed afterwards?

# %%
hooks = Hooks()
manager = reference.buggy.KVManager(MockNetwork(), hooks=hooks)
manager.add_prefill(live_set.ADDR)
for room in (1, 2, 3, 4):
    manager.track_room(live_set.ADDR, room)
    manager.update_status(room, KVPoll.WaitingForInput)
manager.update_status(4, KVPoll.Success)
cleanup = StatusThreadCleanup(manager, hooks, 4)
cleanup.start()  # mori's status thread, parked right after it fetched tracker[addr]
hooks.set("node_failure.after_room", cleanup.release_once)  # it discards 4 after the 1st room
print("_handle_node_failure:", live_set.call(manager._handle_node_failure, live_set.ADDR))
cleanup.stop()
show({room: KVPoll(status).name for room, status in manager.request_status.items()})

# %% [markdown]
# ## 3. The buggy form, live
#
# The lesson's scenario (`reference/lessons/live_set_race/scenario.py`) starts the real heartbeat
# thread on a virtual clock, with two prefills. It kills the first and advances time until the
# heartbeat handles the failure (with the discard placed as above), then kills the second and
# advances again. The verdict comes from what happened: exceptions in threads, how many rooms
# ended up Failed, whether the heartbeat thread is alive. The command line equivalent is
# `python -m reference --lesson live-set-race --variant buggy`.
#
# **Predict before you run:** besides the exception, what else goes wrong in the scenario once
# the heartbeat thread is dead?

# %%
buggy = runs.run("live-set-race", "buggy")
print(runs.verdict_line(buggy, also=False))

# %% [markdown]
# The thread's death is caught by the scenario as evidence, not left to crash anything. To see
# the exception itself, as above, `by_hand` runs the same interleaving (the handler on this
# notebook's thread, what it raises caught) and shows every room and the tracker afterwards.

# %%
print(live_set.by_hand(reference.buggy))

# %% [markdown]
# Room 1 was failed before the discard; rooms 2 and 3 were never reached. In production they
# would sit in WaitingForInput until the 300 s waiting timeout, and only if their metadata had
# been sent.

# %% [markdown]
# ## 4. Write the fix yourself
#
# You have seen the symptom; write the fix before you read it (section 5 shows it). The next cell is
# the buggy `_handle_node_failure`, as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson live-set-race --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
#
# With `explore=True` it then runs the lesson's exploration against your class too (in a
# forked child, a second or so), with the two-lane trace of any counterexample.
#
# To work in your editor instead, copy the template `notebooks/exercises/my_fix` (a package that
# holds the buggy form of every component a lesson touches; `notebooks/README.md` explains it),
# edit its `manager.py`, and run `.venv/bin/python -m reference --lesson live-set-race --impl=PATH` or
# `.venv/bin/python -m pytest --impl=PATH -m "lesson(id='live-set-race')"` from the checkout.
#
# **Predict before you run:** as committed, which thread dies, and how many of the affected rooms get failed?

# %%
# EXERCISE: make the handler iterate what no other thread can change (as committed: buggy)
import reference.buggy


class KVManager(reference.buggy.KVManager):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


# %%
show(exercises.check_fix("live-set-race", exercises.variant_from({"KVManager": KVManager}), explore=True))

# %% [markdown]
# ## 5. The fix, as the real diff
#
# `reference/buggy/manager.py` and `reference/fixed/manager.py` share their line structure, so
# their diff *is* the upstream fix. The hunks tagged with this lesson, read from the files now:

# %%
show(diffs.fix_diff("live-set-race"))

# %% [markdown]
# Section 2's interleaving, on the fixed form:

# %%
show(plots.sequence_picture(sequences.interleaving("live-set-race", "fixed")))

# %% [markdown]
# The whole method, before and after (side by side in Jupyter). Note `hooks.fire(...)` at the
# end of the loop: the hook point the scenario uses, a no-op when nothing is installed.

# %%
show(sources.before_after("KVManager", "_handle_node_failure"))

# %% [markdown]
# ### Upstream's own hunk
#
# The same method in sglang itself, read from the release before the fix
# ([0.5.18](https://pypi.org/project/sglang/0.5.18/)) and the first release with it
# ([0.5.19](https://pypi.org/project/sglang/0.5.19/)), as the wheels ship it
# (`CommonKVManager._handle_node_failure`, found with `ast`; without the wheels the cell says
# how to fetch them). [#36351](https://github.com/sgl-project/sglang/pull/36351)'s change is
# the `list(...)` around the tracker lookup, inside `with self.connection_lock:`; ours is the
# same one call.

# %%
show(upstream_hunks.upstream_hunks("live-set-race"))

# %% [markdown]
# `list()` of a built-in set is one C-level call that runs while the lock is held (and under
# the GIL), so the handler iterates a private snapshot. Mori can still discard from the live
# set: that no longer touches what the handler iterates.

# %% [markdown]
# ## 6. The fixed form, live
#
# **Predict before you run:** on the fixed form, mori's discard still happens mid-loop. Does
# the handler notice it at all? Which rooms end up Failed?

# %%
fixed = runs.run("live-set-race", "fixed")
print(runs.verdict_line(fixed))
print(live_set.by_hand(reference.fixed))

# %% [markdown]
# The scenario's timeline, in virtual seconds: each prefill dies, and the heartbeat needs two
# failed probes 5 s apart to act. In the buggy lane the heartbeat thread died while handling
# the first failure (t = 10 s), so nothing noticed the second one.
#
# **Predict before you run:** how many probes does each lane show, and where do the buggy
# lane's probes stop?

# %%
show(
    plots.timeline_picture(
        [buggy, fixed],
        "live-set-race: what the heartbeat noticed",
        spans={result.variant: live_set.heartbeat_spans(result) for result in (buggy, fixed)},
        ticks={result.variant: live_set.heartbeat_probes(result) for result in (buggy, fixed)},
        tick_label="heartbeat probe (every 5 s)",
    )
)

# %% [markdown]
# **Predict before you run:** of the 3 rooms on the first prefill and the 2 on the second, how
# many does each form fail?

# %%
show(
    plots.counts_picture(
        [buggy, fixed],
        {
            "first_failed": ("of 3 rooms on the 1st prefill,\nfailed", 3),
            "later_failed": ("of 2 rooms on the 2nd prefill,\nfailed", 2),
        },
        "Rooms failed after each prefill died (dotted: what a correct run gives)",
    )
)

# %% [markdown]
# ### Every interleaving, no hooks: the explorer
#
# The hooks place the discard at the one moment that breaks the loop. The explorer
# (`reference/explore/`, `python -m reference --explore --lesson live-set-race`) removes them:
# in a small world of its own (rooms 1 and 2 waiting on the prefill, room 3 done), the
# heartbeat's `_handle_node_failure(addr)` and mori's `_cleanup_room_tracking(3)` run on
# two real threads under [frontrun](https://pypi.org/project/frontrun/)'s DPOR scheduler, which
# runs every interleaving of their shared accesses (at bytecode granularity) and checks after
# each that no thread died and every waiting room ended Failed. It runs in a child process
# (frontrun patches `threading` while it works), in well under a second here. On a
# counterexample it prints the schedule and a two-lane trace: one column per thread, `||` where
# a thread was switched out, `*` on writes to a type of object both threads touch.
#
# **Predict before you run:** in the buggy counterexample, where must the heartbeat be when
# mori fetches the set, and where when mori's discard completes?

# %%
show(exercises.explorations("live-set-race", reference.buggy))

# %%
show(exercises.explorations("live-set-race", reference.fixed))

# %% [markdown]
# Read the schedule with the trace (`||`: switched out before that line completed; the
# thread finishes it when it resumes): the heartbeat has taken the live set and is switched
# out on its `pop` line (`manager.py:28`), so the set is still in the tracker; mori's thread
# fetches that same set object and runs up to its `rooms.discard(...)`, where it is switched
# out in turn; the heartbeat finishes its pop, disconnects and fails rooms 1 and 2 (the
# writes keyed `1` and `2`); mori's discard completes (the schedule's `1x2`); the heartbeat's
# next step of the `for` raises. On the fixed form no interleaving breaks the property: the
# handler iterates a list made inside the lock.

# %% [markdown]
# ### Without the hooks: how often does the race fire?
#
# The stress mode (`--repeat N`) races the real handler against a mori-style status thread
# finishing half of 2000 rooms, with no hooks and a tiny thread switch interval. It reports a
# rate with its seed. The rate varies with the machine and its load; zero fires would prove
# nothing, which is why the verdict above comes from the hooked run and never from this.
# (The committed output shows a non-zero count as `'N>0'`, since it changes every run; run
# the cell to see yours.)
#
# **Predict before you run:** will the race fire at all without hooks in 200 tries? On which
# form?

# %%
stress = [runs.run("live-set-race", form, seed=1, repeat=200) for form in ("buggy", "fixed")]
show({result.variant: result.details["stress"] for result in stress})

# %% [markdown]
# ## 7. What the fix leaves open
#
# **A stale pop.** Mori's cleanup does one more thing after its discard: if *its* set is now
# empty, it pops the address from the tracker. But its set may be a stale one the failure
# handler already popped. If, meanwhile, the prefill restarted behind the same address and a new
# room was tracked in a fresh set, the pop removes the fresh set, and the restarted prefill's
# next failure misses the new room. The snapshot does not help, on either form.
#
# **Predict before you run:** after the restart and room 9's arrival, what does
# `tracker[addr]` hold right before the second failure?

# %%
print(live_set.both_forms(live_set.stale_pop))

# %% [markdown]
# Room 9 is no longer tracked, so when the restarted prefill dies too, the handler fails
# nothing and room 9 waits in WaitingForInput. This needs the cleanup to stall across a failure
# and a restart: the hook makes it certain, production makes it rare.
#
# Also still open after [#36351](https://github.com/sgl-project/sglang/pull/36351):
#
# - `_handle_node_failure` is still not inside a try in the heartbeat loop: any other exception
#   there (a failing disconnect, a bug in a backend's override) still ends failure detection
#   for the life of the process, silently.
# - The failure counter of an address is never reset after a failure; the address simply
#   leaves the table, and must be re-added by a later `/route` fetch to be watched again.

# %% [markdown]
# ## 8. Exercise
#
# Predict, then check. The checker runs the experiment live on both forms and compares.

# %%
print(live_set.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b" or "c"

# %%
show(live_set.check_exercise(ANSWER))

# %% [markdown]
# ## 9. Tempting wrong fixes
#
# Your own fix was judged in section 4, before the answer; now the fixes that look right and are not.
#
# ### A tempting wrong fix
#
# `pop` the set out of the tracker under the lock: the table no longer holds it, so
# "nobody else can reach it". Run it as written.
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem? Will the explorer find a counterexample without any hook?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: pop the set under the lock
class PopKVManager(reference.buggy.KVManager):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.pop(addr, set())
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


# %%
show(exercises.check_fix("live-set-race", exercises.variant_from({"KVManager": PopKVManager}), explore=True))

# %% [markdown]
# Rejected: the status thread fetched its reference to the set *before* the pop, and
# discards from that same object while the handler iterates it. Popping moves the set out
# of the table, not out of reach: only a private copy is safe to iterate. The explorer finds
# the same without hooks: its trace shows mori's `discard` between the pop and the loop.

# %% [markdown]
# ## Discussion questions
#
# 1. `list(...)` of a set is one C-level call under the GIL. Would the fix still be correct on a
#    free-threaded Python (no GIL)? What else would have to hold?
# 2. The PR's author checked every mutator of the tracker sets by reading the code. Which kind
#    of mutator is safe without the fix (section 8's exercise), and why?
# 3. The heartbeat calls `_handle_node_failure` outside any try. Should it catch everything and
#    go on? What could go wrong if it did, and how would you make a dead heartbeat visible?
# 4. The explorer finds the counterexample in a handful of interleavings; the hook-free stress
#    run needs hundreds of tries and may see nothing. What does each verdict let you claim, and
#    which would you put in CI?
# 5. Section 7's stale pop survives the fix. Which identity check would close it, and where?

# %% [markdown]
# ## Recap
#
# - The buggy handler popped the tracker's set under `connection_lock` and iterated that same
#   object after releasing it; mori's cleanup, holding a reference fetched earlier, discards from
#   it without the lock: `RuntimeError: Set changed size during iteration` in the heartbeat,
#   which dies; rooms after the first stay un-failed and later failures go unseen.
# - Two hook points make the interleaving certain (park mori's thread after its `get`, release it
#   after the handler's first room); the explorer confirms it with no hooks at all.
# - The fix is one call: iterate `list(...)` taken inside the lock. In sglang it first shipped in
#   0.5.19.
# - Still open: mori's stale pop can drop a restarted prefill's fresh set, and the handler still
#   runs outside a try in the heartbeat loop.

# %% [markdown]
# ## Going further
#
# - `python -m reference --lesson live-set-race --variant buggy --repeat 200 --seed 1` prints
#   the verdict with the stress rate.
# - `tests/test_live_set_race.py` holds the lesson's tests; `reference/hooks.py` explains the
#   hook points, `reference/clock.py` the virtual clock that runs the heartbeat.
