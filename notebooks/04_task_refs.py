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
# the interleaving, run both components on the buggy form and watch `gc.collect()` destroy a
# background loop mid-execution, read the fix as the real diff, run the fixed form, measure
# honestly which awaits make a task collectable at all, look at what the fix leaves open, and
# answer one question. Everything runs on the mock transport with a jump-ahead event loop, so
# upstream's 180 s and 120 s timers pass instantly.

# %%
from reference.lessons.task_refs import teaching as tasks
from reference.teaching import diffs, exercises, plots, runs, sequences

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
plots.sequence_picture(sequences.interleaving("task-refs", "buggy"))

# %%
plots.sequence_picture(sequences.interleaving("task-refs", "fixed"))

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

# %%
buggy = runs.run("task-refs", "buggy")
print(runs.verdict_line(buggy).replace(" | ", "\n        "))

# %% [markdown]
# ## 4. The fix, as the real diff
#
# Both sites, read from `reference/buggy` and `reference/fixed` now:

# %%
diffs.fix_diff("task-refs")

# %% [markdown]
# A set of strong references, and `add_done_callback(set.discard)` so a finished task does not
# stay in it forever. `discard` (not `remove`) tolerates a second call. Python 3.11's
# `asyncio.TaskGroup` gives the same guarantee, plus error propagation, for tasks with a
# bounded life; a process-lifetime loop is what the set is for.

# %% [markdown]
# ## 5. The fixed form, live

# %%
fixed = runs.run("task-refs", "fixed")
print(runs.verdict_line(fixed).replace(" | ", "\n        "))

# %%
plots.counts_picture(
    [buggy, fixed],
    {
        ("DP dispatcher", "failed_fast"): ("of 2 in-flight requests,\nfailed fast (503)", 2),
        ("DP dispatcher", "routed_to_dead"): ("of 4 new requests,\nrouted to the dead rank", 0),
        ("DP dispatcher", "stale_mappings"): ("of 4 mappings, left\nto the dead rank", 0),
    },
    "DP dispatcher after rank 1 died (dotted: what a correct run gives)",
)

# %%
plots.series_picture(
    [buggy, fixed],
    ("bootstrap server", "rooms_left"),
    "room_to_dp_rank entries after each 250 s jump (8 new rooms before each)",
    xlabel="clock jumps of 250 s",
    ylabel="entries left",
)

# %% [markdown]
# ## 6. The honest half, and what the fix leaves open
#
# **Was upstream's bug live?** Which awaits leave a lone task collectable, measured now on this
# Python (each row parks one task, drops every reference of ours, runs `gc.collect()`):

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
# that exception. Here the stale-mapping sweep hits a bug on its first round:

# %%
print(tasks.both_forms_swallowed())

# %% [markdown]
# Same outcome in both forms: `/health` stays OK, no one restarts the loop, mappings are never
# evicted again, and the only trace is a log line written when the dead task is freed. Upstream
# opened [issue #34434](https://github.com/sgl-project/sglang/issues/34434) to audit the remaining fire-and-forget tasks (an AST check of our own:
# `python -m reference.lessons.task_refs.taskcheck reference/buggy`). A hardened form would
# supervise its loops: log, mark unhealthy, restart.

# %% [markdown]
# ## 7. Exercise
#
# Predict, then check. The checker parks both tasks live, the same way the table above does.

# %%
print(tasks.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b", "c" or "d"

# %%
tasks.check_exercise(ANSWER)

# %% [markdown]
# ## 8. Write the fix yourself
#
# The warm-up above asked for a prediction; now write the fix. The next cell is
# the buggy `DPDispatcher.start` and `BootstrapServer._start_background_tasks`, as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson task-refs --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
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
exercises.check_fix(
    "task-refs", exercises.variant_from({"DPDispatcher": DPDispatcher, "BootstrapServer": BootstrapServer})
)

# %% [markdown]
# ### A tempting wrong fix
#
# "Save a reference to the result of `create_task`": keep the tasks in a list, with a done
# callback, as the asyncio docs say. Run it as written.
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: hold the tasks in a local list
class LocalListDispatcher(reference.buggy.DPDispatcher):
    def start(self) -> None:
        tasks = []
        for body in (self._result_listener(), self._worker_watchdog(), self._cleanup_stale_mappings()):
            task = asyncio.create_task(body)
            tasks.append(task)
            task.add_done_callback(tasks.remove)


# %%
exercises.check_fix(
    "task-refs",
    exercises.variant_from({"DPDispatcher": LocalListDispatcher, "BootstrapServer": BootstrapServer}),
)

# %% [markdown]
# Rejected: the list is a local variable and dies when `start()` returns; a done callback
# is held *by* the task, not the other way round. The reference must live as long as the
# owner (`self`), which is what the asyncio documentation's `background_tasks` set does.

# %% [markdown]
# ## Going further
#
# - `python -m reference --lesson task-refs --transport loopback` runs the dispatcher with real
#   worker processes over ZMQ and the bootstrap server over real HTTP.
# - `python -m reference.lessons.task_refs.taskcheck reference tests` is the AST scan [PR #33048](https://github.com/sgl-project/sglang/pull/33048) used: it lists
#   every `create_task`/`ensure_future` whose result is thrown away.
# - `tests/test_task_refs.py` and `tests/test_task_refs_bootstrap.py` hold the lesson's tests,
#   including the one showing upstream's own configuration survives `gc.collect()`.
