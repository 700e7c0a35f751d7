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
# # Lesson 4: a bare `create_task` lets the garbage collector stop a background loop
#
# Lesson id `task-refs` · upstream fix: sglang [PR #33048](https://github.com/sgl-project/sglang/pull/33048) (first released in [sglang 0.5.19](https://pypi.org/project/sglang/0.5.19/)) ·
# components: the multimodal encoder's DP dispatcher and the bootstrap server's cleanup task.
#
# What you will do, in about an hour: read what upstream saw (and what it argued about), draw
# the interleaving, see where a background loop parks, call `DPDispatcher.start()` and start the
# bootstrap server's cleanup yourself and watch `gc.collect()` destroy a loop mid-execution, run
# the lesson's scenario on the buggy form, read the fix as the real diff (ours and upstream's),
# run the fixed form, measure honestly which awaits make a task collectable at all, look at what
# the fix leaves open, and write the fix yourself. Everything runs on the mock transport with a
# jump-ahead event loop, so upstream's 180 s and 120 s timers pass instantly.
#
# **Learning objectives.** By the end you can:
#
# 1. explain why a task created with a bare `create_task` can be garbage-collected while it is
#    still pending (the loop holds its tasks weakly), and what the process then silently loses;
# 2. tell, for a given `await`, whether a lone task parked there is collectable: follow the
#    references from the event loop (timers, selector readers) to the awaited future;
# 3. call `DPDispatcher.start()` and the bootstrap server's `start()` yourself, then
#    `gc.collect()`, and read which loops survived;
# 4. write the fix (a set of strong references owned by the component, released by a done
#    callback) and say why a local list is not enough;
# 5. say what the fix leaves open: a loop that raises is still silently gone.
#
# **In a reading group** (about an hour): sections 1 and 2 (20 min), 3 to 5 (15 min), 6
# (10 min), the exercises (15 min). Before each live cell there is a **Predict before you
# run** question: answer it aloud, then run the cell. Discussion questions and a recap are at
# the end.

# %%
import reference.buggy
import reference.fixed
from reference.lessons.task_refs import teaching as tasks
from reference.teaching import diffs, exercises, plots, runs, sequences, sources, upstream_hunks
from reference.teaching.display import show

# %% [markdown]
# ## 1. The story
#
# asyncio's documentation for `create_task` carries a warning: *save a reference to the result
# of this function, to avoid a task disappearing mid-execution; the event loop only keeps weak
# references to tasks.* A task that nothing else references can be garbage-collected while it
# is still pending; Python then logs "Task was destroyed but it is pending!" and the coroutine
# simply stops.
#
# **[PR #33048](https://github.com/sgl-project/sglang/pull/33048)** scanned
# `srt/disaggregation/` with an AST walk for `create_task`/`ensure_future` results thrown away as
# bare expressions and found five. Four are process-lifetime loops, the worst case if collected:
#
# - `DPDispatcher._result_listener` (the multimodal encoder's DP dispatcher): stops consuming
#   worker results, so every request times out after 180 s;
# - `DPDispatcher._worker_watchdog`: dead ranks go unnoticed;
# - `DPDispatcher._cleanup_stale_mappings`: stale mappings are never evicted;
# - `CommonKVBootstrapServer._cleanup_expired_entries`: `room_to_dp_rank` grows without bound.
#
# The fifth, an encode task, turned out to be held by an `asyncio.wait` set after a refactor,
# and its hunk was dropped in the rebase. The fix follows the pattern `MMEncoder` already used:
# a `background_tasks` set holds each task, and `task.add_done_callback(set.discard)` releases
# it when it finishes. Two files, +17/-4, first released in [sglang 0.5.19](https://pypi.org/project/sglang/0.5.19/).
#
# The review is the interesting part. Was this a bugfix or hardening? No test was added: the
# author argued a GC test is inherently flaky and each site needs a live dispatcher or server
# to reach. A reviewer noted that a failing task still has no path to report its exception,
# which became the follow-up audit [issue #34434](https://github.com/sgl-project/sglang/issues/34434).
#
# And the honest answer to "was it live?": all four loops park on objects the event loop itself
# holds (timers in `asyncio.sleep`, the dispatcher's zmq socket, `add_reader` handles), so they
# are *not* collectable today; no incident was reported. This lesson shows both sides: a task
# parked on an awaitable only it can reach *is* destroyed in the buggy form, and a task parked
# in `asyncio.sleep` or a socket read is not.

# %% [markdown]
# ## 2. The interleaving
#
# A task is destroyed only if nothing but its own frame reaches what it awaits. Upstream's
# loops wait on timers and sockets, which the loop holds, so the scenario changes exactly one
# thing (see `reference/lessons/task_refs/dispatcher_probe.py`): the worker pool posts exits on a
# board that holds its waiters weakly, so the watchdog parks on an `asyncio.Event` only it can
# reach. Then `gc.collect()` runs, and rank 1 dies.

# %%
show(plots.sequence_picture(sequences.interleaving("task-refs", "buggy")))

# %% [markdown]
# ### Where the watchdog parks
#
# The whole mechanism is in these lines: the exit board keeps its waiters in a set (a
# `WeakSet` in the lesson's configuration, `hold_waiters=False`), the watchdog awaits
# `exits.next()`, which parks it on a fresh `asyncio.Event`, and the pool's `post()` wakes it
# when a worker exits. With a `WeakSet`, that Event is reachable only from the watchdog's own
# frame, and the watchdog's task only from the loop's weak set of tasks:

# %%
show(tasks.parking_source())

# %% [markdown]
# ### The components, by hand
#
# A cell in Jupyter already runs inside an event loop, so `tasks.LoopLab()` gives the
# components one of their own, on a worker thread: `lab.run(...)` awaits something there,
# `lab.call(f)` calls `f()` there (so its `create_task` finds a running loop), and both let the
# loop settle so that new tasks run until they park. The pool is two in-process DP workers
# whose exits go to the weak board above.
#
# **Predict before you run:** after `dispatcher.start()` on the buggy form, how many tasks are
# pending, and is anything of ours holding them?

# %%
lab = tasks.LoopLab()
pool = lab.worker_pool()
dispatcher = reference.buggy.DPDispatcher(pool, tasks.CONFIG)
lab.run(pool.start())
lab.call(dispatcher.start)  # three bare asyncio.create_task(...) calls
show(lab.tasks())

# %% [markdown]
# **Predict before you run:** `gc.collect()` now runs on the loop's thread. Which of the three
# loops are left? (Each parks on something different: the listener on the pool's reply queue,
# the watchdog on the weak exit board, the sweep in `asyncio.sleep`.)

# %%
show(lab.collect_garbage())

# %% [markdown]
# **Predict before you run:** rank 1 now dies. Does the dispatcher notice?

# %%
lab.run(pool.kill(1))
seen = {
    "dead ranks the dispatcher knows of": set(dispatcher.dead_ranks),
    "exits nobody read": pool.exits.unread,
}
lab.run(dispatcher.close())
lab.close()
show(seen)

# %% [markdown]
# The watchdog is gone, so nobody reads the exit notice: no dead rank, and (section 3) its
# in-flight requests wait for their 180 s timeout. The same calls on the fixed form:
#
# **Predict before you run:** what does `gc.collect()` destroy now, and does the dispatcher
# learn that rank 1 died?

# %%
lab = tasks.LoopLab()
pool = lab.worker_pool()
dispatcher = reference.fixed.DPDispatcher(pool, tasks.CONFIG)
lab.run(pool.start())
lab.call(dispatcher.start)  # each task added to self.background_tasks
seen = {"gc.collect()": lab.collect_garbage()}
lab.run(pool.kill(1))
seen |= {
    "dead ranks the dispatcher knows of": set(dispatcher.dead_ranks),
    "exits nobody read": pool.exits.unread,
}
lab.run(dispatcher.close())
lab.close()
show(seen)

# %% [markdown]
# The bootstrap server runs its own event loop on its own thread; `server.start()` starts that
# thread, which calls `_start_background_tasks(loop)` (upstream: inside `_run_server`) to start
# the cleanup. Its cleanup waits for each 120 s round on a metronome that holds it weakly
# (`reference/lessons/task_refs/bootstrap_probe.py`).
#
# **Predict before you run:** after `gc.collect()` on the server's thread, 8 rooms register
# their DP rank and the clock jumps 250 s (past the 240 s an entry may live). How many
# `room_to_dp_rank` entries are left, on each form?

# %%
bench = tasks.ServerBench(reference.buggy)
bench.server.start()  # its thread runs _start_background_tasks(loop), then the loop
seen = {"pending after start()": bench.tasks(), "gc.collect()": bench.collect_garbage()}
bench.register_rooms(range(1, 9))  # POST /register_dp_rank for 8 rooms
seen["after +250 s"] = bench.jump(250)
bench.server.close()
show(seen)

# %% [markdown]
# **Predict before you run:** the same on the fixed form: how many cleanup rounds run in the
# 250 s?

# %%
bench = tasks.ServerBench(reference.fixed)
bench.server.start()
seen = {"pending after start()": bench.tasks(), "gc.collect()": bench.collect_garbage()}
bench.register_rooms(range(1, 9))
seen["after +250 s"] = bench.jump(250)
bench.server.close()
show(seen)

# %% [markdown]
# ## 3. The buggy form, live
#
# The scenario (`reference/lessons/task_refs/scenario.py`) runs two probes. The **DP dispatcher**: one
# encode per rank, `gc.collect()`, rank 1 takes two requests and dies, four new requests arrive,
# the clock jumps 180 s. The **bootstrap server's cleanup** (its wait for the next 120 s round
# made collectable the same way): `gc.collect()` on the server's thread, then twice, 8 rooms
# register their DP rank and the clock jumps 250 s, past the 240 s an entry may live. The
# verdict comes from what the components did. Command line:
# `python -m reference --lesson task-refs --variant buggy`.
#
# **Predict before you run:** rank 1 had two requests in flight when it died. On the buggy form,
# when are they answered, and with what?

# %%
buggy = runs.run("task-refs", "buggy")
print(runs.verdict_line(buggy, also=False))

# %% [markdown]
# ## 4. Write the fix yourself
#
# You have seen the symptom; write the fix before you read it (section 5 shows it). The next cell is
# the buggy `DPDispatcher.start` and `BootstrapServer._start_background_tasks`, as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson task-refs --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
#
# To work in your editor instead, copy the template `notebooks/exercises/my_fix` (a package that
# holds the buggy form of every component a lesson touches; `notebooks/README.md` explains it),
# edit its `dispatcher.py` and `bootstrap_server.py`, and run `.venv/bin/python -m reference --lesson task-refs --impl=PATH` or
# `.venv/bin/python -m pytest --impl=PATH -m "lesson(id='task-refs')"` from the checkout.
#
# **Predict before you run:** as committed, which loop does `gc.collect()` destroy first,
# and what does the dispatcher then miss?

# %%
# EXERCISE: keep every background loop alive until it ends (as committed: the buggy methods)
import asyncio

import reference.buggy


class DPDispatcher(reference.buggy.DPDispatcher):
    def start(self) -> None:
        asyncio.create_task(self._result_listener())  # noqa: RUF006 (ruff sees the bug too)
        asyncio.create_task(self._worker_watchdog())  # noqa: RUF006
        asyncio.create_task(self._cleanup_stale_mappings())  # noqa: RUF006


class BootstrapServer(reference.buggy.BootstrapServer):
    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.create_task(self._cleanup_expired_entries())


# %%
show(
    exercises.check_fix(
        "task-refs",
        exercises.variant_from({"DPDispatcher": DPDispatcher, "BootstrapServer": BootstrapServer}),
    )
)

# %% [markdown]
# ## 5. The fix, as the real diff
#
# Both sites, read from `reference/buggy` and `reference/fixed` now:

# %%
show(diffs.fix_diff("task-refs"))

# %% [markdown]
# Section 2's interleaving, on the fixed form:

# %%
show(plots.sequence_picture(sequences.interleaving("task-refs", "fixed")))

# %% [markdown]
# Each method whole, before and after:

# %%
show(sources.before_after("DPDispatcher", "start"))

# %%
show(sources.before_after("BootstrapServer", "_start_background_tasks"))

# %% [markdown]
# **Upstream's own hunk**, beside ours: the methods [PR #33048](https://github.com/sgl-project/sglang/pull/33048)
# touched, read from sglang's released code, 0.5.18 (the last release without it) against 0.5.19
# (the first with it), from the wheels in `.cache/sglang/` (`bash ci/upstream.sh
# --fetch-only` fetches them; without them the cell prints one line saying so). The dispatcher
# moved from `encode_server.py` to `encoder/runtime.py` between the two releases; the
# metadata-wait lines the same release added to `DPDispatcher.__init__` are another change,
# left out (the cell says so); the fix is the `background_tasks` lines. Upstream starts
# the bootstrap server's cleanup inside `_run_server`; ours has it in `_start_background_tasks`,
# which the common `_run_server` calls.

# %%
show(upstream_hunks.upstream_hunks("task-refs"))

# %% [markdown]
# A set of strong references, and `add_done_callback(set.discard)` so a finished task does not
# stay in it forever. `discard` (not `remove`) tolerates a second call. Python 3.11's
# `asyncio.TaskGroup` gives the same guarantee, plus error propagation, for tasks with a
# bounded life; a process-lifetime loop is what the set is for.

# %% [markdown]
# ## 6. The fixed form, live
#
# **Predict before you run:** the same scenario on the fixed form: how fast do the two
# in-flight requests fail, and where do the four new requests go?

# %%
fixed = runs.run("task-refs", "fixed")
print(runs.verdict_line(fixed))

# %%
show(
    plots.counts_picture(
        [buggy, fixed],
        {
            ("DP dispatcher", "failed_fast"): ("of 2 in-flight requests,\nfailed fast (503)", 2),
            ("DP dispatcher", "routed_to_dead"): ("of 4 new requests,\nrouted to the dead rank", 0),
            ("DP dispatcher", "stale_mappings"): ("of 4 mappings, left\nto the dead rank", 0),
        },
        "DP dispatcher after rank 1 died (dotted: what a correct run gives)",
        ylabel="requests or mappings",
    )
)

# %%
show(
    plots.series_picture(
        [buggy, fixed],
        ("bootstrap server", "rooms_left"),
        "room_to_dp_rank entries after each 250 s jump (8 new rooms before each)",
        xlabel="clock jumps of 250 s",
        ylabel="entries left",
    )
)

# %% [markdown]
# ## 7. The honest half, and what the fix leaves open
#
# **Was upstream's bug live?** Which awaits leave a lone task collectable, measured now on this
# Python (each row parks one task, drops every reference of ours, runs `gc.collect()`).
#
# **Predict before you run:** a task parked in `asyncio.sleep(3600)`: collectable or not? One
# parked in `await asyncio.Event().wait()` on an Event only it knows?

# %%
print(tasks.collectability_table())

# %% [markdown]
# Upstream's loops sleep, read a zmq socket, or sit in `add_reader` callbacks: all rows marked
# "no". Its bare tasks were latent, which is what the reviewer meant by "hardening". The fix is
# still right: what a loop awaits is an accident of today's code, and one refactor (an internal
# event bus, a private `asyncio.Event`) turns a latent bug into a live one, as the scenario's
# one-line change shows.
#
# **A loop that raises is silently gone, fixed or not.** The reviewer's other point: the set
# releases a task the moment it finishes, with or without an exception, and nothing retrieves
# that exception. Here the stale-mapping sweep hits a bug on its first round.
#
# **Predict before you run:** does the fixed form notice that its sweep died?

# %%
print(tasks.both_forms_swallowed())

# %% [markdown]
# Same outcome in both forms: `/health` stays OK, no one restarts the loop, mappings are never
# evicted again, and the only trace is a log line written when the dead task is freed. Upstream
# opened [issue #34434](https://github.com/sgl-project/sglang/issues/34434) to audit the remaining fire-and-forget tasks (an AST check of our own:
# `python -m reference.lessons.task_refs.taskcheck reference/buggy`). A hardened form would
# supervise its loops: log, mark unhealthy, restart.

# %% [markdown]
# ## 8. Exercise
#
# Predict, then check. The checker parks both tasks live, the same way the table above does.

# %%
print(tasks.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b", "c" or "d"

# %%
show(tasks.check_exercise(ANSWER))

# %% [markdown]
# ## 9. Tempting wrong fixes
#
# Your own fix was judged in section 4, before the answer; now the fixes that look right and are not.
#
# ### A tempting wrong fix
#
# "Save a reference to the result of `create_task`": keep the tasks in a list, with a done
# callback that retrieves each one's exception, as the asyncio docs say. Run it as written
# (with the fixed `BootstrapServer`, so that only the dispatcher is judged).
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: hold the tasks in a local list
class LocalListDispatcher(reference.buggy.DPDispatcher):
    def start(self) -> None:
        tasks = [
            asyncio.create_task(self._result_listener()),
            asyncio.create_task(self._worker_watchdog()),
            asyncio.create_task(self._cleanup_stale_mappings()),
        ]
        for task in tasks:
            task.add_done_callback(self.retrieve)

    @staticmethod
    def retrieve(done: asyncio.Task) -> None:  # so that no exception goes unretrieved
        if not done.cancelled():
            done.exception()


# %%
show(
    exercises.check_fix(
        "task-refs",
        exercises.variant_from(
            {"DPDispatcher": LocalListDispatcher, "BootstrapServer": reference.fixed.BootstrapServer}
        ),
    )
)

# %% [markdown]
# Rejected: the list is a local variable and dies when `start()` returns; a done callback
# is held *by* the task, not the other way round. The reference must live as long as the
# owner (`self`), which is what the asyncio documentation's `background_tasks` set does.

# %% [markdown]
# ### Another tempting wrong fix
#
# "The bug report was about the watchdog": keep a reference to that one loop, on `self`. The
# listener parks on the result socket and the sweep in `asyncio.sleep`, both held by the event
# loop today (the table in section 7). It is `hold_only_watchdog` in the gallery; here with the
# fixed bootstrap server, so only the dispatcher is judged.
#
# **Predict before you run:** the story makes exactly the watchdog collectable. Will the story
# pass? Will the checklist?


# %%
# EXERCISE: another tempting wrong fix, to run and see rejected: hold only the watchdog
class WatchdogOnlyDispatcher(reference.buggy.DPDispatcher):
    def start(self) -> None:
        asyncio.create_task(self._result_listener())  # noqa: RUF006
        self.watchdog = asyncio.create_task(self._worker_watchdog())
        asyncio.create_task(self._cleanup_stale_mappings())  # noqa: RUF006


# %%
show(
    exercises.check_fix(
        "task-refs",
        exercises.variant_from(
            {"DPDispatcher": WatchdogOnlyDispatcher, "BootstrapServer": reference.fixed.BootstrapServer}
        ),
    )
)

# %% [markdown]
# The story passes; two checks do not. `two-dispatchers-independent` makes every loop
# collectable the same honest way (its reply board, exit board or timer holds its waiter
# weakly, `reference/lessons/task_refs/weak_world.py`): what a loop waits on is an accident
# of today's code, so every loop needs the reference, not just the one that failed last
# time. And `ended-loops-released`: `self.watchdog` still holds the task after `close()`
# cancelled it, where the set's done callback would have let it go.

# %% [markdown]
# ## Discussion questions
#
# 1. Upstream's four loops were not collectable in the released wiring. Was
#    [PR #33048](https://github.com/sgl-project/sglang/pull/33048) a bugfix or hardening, and
#    should that change how it is tested?
# 2. The author argued a GC test is inherently flaky. This lesson makes one deterministic by
#    changing one thing (a waiter held weakly). Is that a faithful test of upstream's code, or
#    of a different program?
# 3. `add_done_callback(set.discard)` drops a task that ended with an exception, and the
#    exception with it. What should a process-lifetime loop do when it fails: log, mark the
#    component unhealthy, restart, crash the process?
# 4. When is `asyncio.TaskGroup` the better tool, and why does it not fit a loop that lives
#    as long as the server?
# 5. Where else in a codebase would you look for a bare `create_task` (the AST scan below), and
#    which awaits in your own code park on something only the task itself can reach?
#
# ## Recap
#
# - The event loop holds its tasks weakly. A pending task is kept alive only by what will
#   wake it (a timer, a selector reader, a future someone else holds) or by a reference you
#   keep; a bare `create_task` whose task parks on something only its own frame reaches is
#   destroyed by the next `gc.collect()`, and "Task was destroyed but it is pending!" is the
#   only trace.
# - The fix: the owner keeps a set of its tasks and each task removes itself when done, so
#   the reference lives as long as the owner (`self`), not as long as a local variable.
# - Upstream's own loops waited on timers and sockets, so the bug was latent; one refactor to
#   a weakly held waiter makes it live, as the scenario shows.
# - Still open: a loop that raises ends silently in both forms
#   ([issue #34434](https://github.com/sgl-project/sglang/issues/34434)).
#
# ## Going further
#
# - `python -m reference --lesson task-refs --transport loopback` runs the dispatcher with real
#   worker processes over ZMQ and the bootstrap server over real HTTP.
# - `python -m reference.lessons.task_refs.taskcheck reference tests` is the AST scan [PR #33048](https://github.com/sgl-project/sglang/pull/33048) used: it lists
#   every `create_task`/`ensure_future` whose result is thrown away.
# - `tests/test_task_refs.py` and `tests/test_task_refs_bootstrap.py` hold the lesson's tests,
#   including the one showing upstream's own configuration survives `gc.collect()`.
