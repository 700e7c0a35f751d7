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
# # Lesson 1: a late Failed resurrects a cleared room
#
# Lesson id `failed-resurrect` · upstream fix: sglang [PR #24539](https://github.com/sgl-project/sglang/pull/24539), the follow-up of [PR #24522](https://github.com/sgl-project/sglang/pull/24522)
# (both first released in [sglang 0.5.12](https://pypi.org/project/sglang/0.5.12/)) · component: the decode-side status manager,
# `update_status`.
#
# What you will do, in about an hour: read what upstream saw, make the late abort by hand on the
# real manager, read how the lesson orders it, run the buggy form and watch the leak, read the
# fix as our diff and as upstream's own hunk, run the fixed form, let the explorer try every
# interleaving of the two threads, look at what the fix leaves open, and write the fix
# yourself. Every cell runs the reference components in `reference/` on the in-process mock
# transport; nothing here needs a GPU or a network.
#
# **Learning objectives.** After this lesson you can
#
# 1. explain why a status table keyed by a reusable id must not let a late write re-create an
#    entry that `clear()` removed, and why Failed being the *smallest* `KVPoll` matters;
# 2. reproduce the leak with four calls on the real `KVManager`, and say which branch of
#    `update_status` creates the entry;
# 3. read upstream's fix in the sglang releases themselves, and tell it apart from what else
#    changed between the two releases;
# 4. tell what the fix guarantees (a Failed that *starts after* `clear()` returned) from what
#    it does not (a Failed racing `clear()`, a reused room), using the explorer's verdicts;
# 5. write the fix and have it judged by the lesson's checklist and explorer.
#
# Each live cell is preceded by a **Predict before you run** question: answer it (aloud, or on
# paper) before running the cell. The discussion questions and a recap are at the end.

# %%
import reference.buggy
import reference.fixed
from reference.lessons.failed_resurrect import teaching as resurrect
from reference.status import KVPoll
from reference.teaching import diffs, exercises, plots, runs, sequences, sources, upstream_hunks
from reference.teaching.display import show
from reference.transport.mock import MockNetwork

# %% [markdown]
# ## 1. The story
#
# In PD disaggregation every request owns a `bootstrap_room`, and each side keeps the room's
# transfer status in a table, `request_status`, inside its KV manager. A status is a `KVPoll`, a
# plain int whose order matters: `update_status` keeps `max(old, new)` for every write except
# Failed, and the decode scheduler min-reduces statuses across tensor-parallel ranks so that one
# failed rank fails them all. That is why Failed is the *smallest* value.
#
# **Predict before you run:** which number does Failed have, and which does Success?

# %%
show([(status.name, int(status)) for status in KVPoll])

# %% [markdown]
# When a request finishes, its receiver's `clear()` pops the room from the table. Nothing else
# ever removes an entry.
#
# **[PR #24522](https://github.com/sgl-project/sglang/pull/24522)** ("Fix missing update_status call in abort() across all KV backends") made
# `abort()` write Failed into the manager's table, not only into the receiver's local latch.
# The same day its follow-up, **[PR #24539](https://github.com/sgl-project/sglang/pull/24539)**, named what that opened up. Its
# description lists two problems:
#
# 1. **A memory leak.** A late abort, or any asynchronous Failed (a timeout, a status thread),
#    can arrive *after* `clear()`. `update_status` then finds the room absent and stores Failed
#    for it: the room is back, and nobody will ever clear it again. `request_status` grows by
#    one stale entry per late abort.
# 2. **Cross-request pollution.** Users may pass their own `bootstrap_room`, so rooms get
#    reused; the PR says a new request on a reused room may read Failed from its first poll.
#
# The fix is six lines in `update_status`: for an absent room, a Failed write does nothing.
# No test was added; the PR relied on the existing CI. Section 7 checks the second claim
# honestly: it is only half right, and the half that is right is not covered by the fix.

# %% [markdown]
# ### The late abort, by hand
#
# Four calls on the real decode-side `KVManager` (the buggy form), on the mock transport:
# room 7 opens (`update_status(7, Bootstrapping)`, then `WaitingForInput`), the request
# finishes and its receiver's `clear()` removes the room, and then the abort path, too late,
# does what `abort()` does to the manager since #24522: `record_failure`, then
# `update_status(7, Failed)`.
#
# **Predict before you run:** what does `request_status` hold after the last call: `{}`, or
# something else?

# %%
manager = reference.buggy.KVManager(MockNetwork())
manager.update_status(7, KVPoll.Bootstrapping)
manager.update_status(7, KVPoll.WaitingForInput)
manager.clear(7)
print("after clear():     ", manager.request_status)
manager.record_failure(7, "Aborted by AbortReq.")
manager.update_status(7, KVPoll.Failed)
print("after late Failed: ", manager.request_status, manager.failure_records)

# %% [markdown]
# Room 7 is back, as Failed, and no receiver exists any more to `clear()` it. The same four
# calls on the fixed form:

# %%
manager = reference.fixed.KVManager(MockNetwork())
manager.update_status(7, KVPoll.Bootstrapping)
manager.update_status(7, KVPoll.WaitingForInput)
manager.clear(7)
manager.record_failure(7, "Aborted by AbortReq.")
manager.update_status(7, KVPoll.Failed)
print("after late Failed: ", manager.request_status, manager.failure_records)

# %% [markdown]
# (The failure record survives on both forms: `record_failure` has the same "a late write
# re-creates it" shape, and no upstream fix covers it; lesson `failure-records` is about that.)

# %% [markdown]
# ## 2. The interleaving
#
# Room 7 runs normally, the scheduler clears it, and then the abort path, too late, writes
# Failed. In the buggy form `update_status` has no idea the room was cleared:

# %%
show(plots.sequence_picture(sequences.interleaving("failed-resurrect", "buggy")))

# %% [markdown]
# ### How the lesson orders it: the real code
#
# This race needs no hook point. The scenario delivers each late abort *after* `clear()` in
# program order, on one thread (`late_abort` and `observe` below). The explorer (section 6)
# takes the order away: `scheduler_clear` and `late_failed` run on two threads, frontrun
# chooses every switch, and `check_late` judges only the runs where the Failed started after
# `clear()` returned (the case the fix claims). Here is that code, read from the files now:

# %%
show(resurrect.ordering_source())

# %% [markdown]
# ## 3. The buggy form, live
#
# The lesson's scenario (`reference/lessons/failed_resurrect/scenario.py`) runs 8 rooms through their
# normal life (Bootstrapping, WaitingForInput, sometimes Success), clears each one, then
# delivers the late abort, and reads the table. Its verdict comes from what is in the table,
# never from which form it was given. The command-line equivalent is
# `python -m reference --lesson failed-resurrect --variant buggy`.
#
# **Predict before you run:** after 8 cleared rooms and 8 late aborts, how many entries does
# `request_status` hold on the buggy form?

# %%
buggy = runs.run("failed-resurrect", "buggy")
print(runs.verdict_line(buggy, also=False))
show(buggy.details)

# %% [markdown]
# Every cleared room came back as Failed, and the table grew by one with each late abort. In a
# server that runs for weeks, that is a slow leak proportional to the number of aborted
# requests, and every entry looks like a legitimate failure.

# %% [markdown]
# ## 4. Write the fix yourself
#
# You have seen the symptom; write the fix before you read it (section 5 shows it). The next cell is
# the buggy `update_status`, as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson failed-resurrect --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. With `explore=True` it then runs the
# lesson's explorations against your class too (in a forked child, a second or so), with the
# two-lane trace of any counterexample. As committed, it shows `BUG`.
#
# To work in your editor instead, copy the template `notebooks/exercises/my_fix` (a package that
# holds the buggy form of every component a lesson touches; `notebooks/README.md` explains it),
# edit its `manager.py`, and run `.venv/bin/python -m reference --lesson failed-resurrect --impl=PATH` or
# `.venv/bin/python -m pytest --impl=PATH -m "lesson(id='failed-resurrect')"` from the checkout.
#
# **Predict before you run:** as committed, which check fails, and what does it observe in `request_status`?

# %%
# EXERCISE: make a late Failed for a cleared room do nothing (as committed: the buggy method)
import reference.buggy
from reference.status import KVPoll


class KVManager(reference.buggy.KVManager):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if bootstrap_room not in self.request_status:
            self.request_status[bootstrap_room] = status
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)


# %%
show(exercises.check_fix("failed-resurrect", exercises.variant_from({"KVManager": KVManager}), explore=True))

# %% [markdown]
# ## 5. The fix, as the real diff
#
# `reference/buggy/manager.py` and `reference/fixed/manager.py` share their line structure, so
# their diff *is* the upstream fix. Here are the hunks tagged with this lesson, read from the
# files now (the same as `diff -u reference/buggy/manager.py reference/fixed/manager.py`):

# %%
show(diffs.fix_diff("failed-resurrect"))

# %% [markdown]
# Section 2's interleaving, on the fixed form:

# %%
show(plots.sequence_picture(sequences.interleaving("failed-resurrect", "fixed")))

# %% [markdown]
# The whole method, before and after (side by side in Jupyter):

# %%
show(sources.before_after("KVManager", "update_status"))

# %% [markdown]
# ### Upstream's own hunk
#
# The same method in sglang itself, read from the release before the fix
# ([0.5.11](https://pypi.org/project/sglang/0.5.11/)) and the first release with it
# ([0.5.12](https://pypi.org/project/sglang/0.5.12/)), as the wheels ship it
# (`CommonKVManager.update_status`, found with `ast`; without the wheels the cell says how to
# fetch them). Only [#24539](https://github.com/sgl-project/sglang/pull/24539)'s hunk is
# shown, the added `if status == KVPoll.Failed: return` with its comment: the same release
# also removed six `req_to_decode_prefix_len` lines here (0.5.12 does that prefill-side
# cleanup in `CommonKVSender.clear()` instead), and the cell leaves them out and says so.

# %%
show(upstream_hunks.upstream_hunks("failed-resurrect"))

# %% [markdown]
# An absent room means "cleared, or never opened". A request opens its room with Bootstrapping
# (or WaitingForInput), never with Failed, so a Failed write for an absent room can only be
# late news about a request that is gone: dropping it is safe. Writes for present rooms keep
# their old meaning.

# %% [markdown]
# ## 6. The fixed form, live
#
# **Predict before you run:** the fixed form on the same 8 rooms: how many entries, and does
# any check of the lesson's checklist still fail?

# %%
fixed = runs.run("failed-resurrect", "fixed")
print(runs.verdict_line(fixed))

# %%
show(
    plots.series_picture(
        [buggy, fixed],
        "sizes",
        "request_status after each late abort (every room was cleared first)",
        xlabel="late aborts delivered",
        ylabel="entries in request_status",
    )
)

# %% [markdown]
# ### Every interleaving, no hooks: the explorer
#
# The scenario shows one order. The explorer (`reference/explore/`, `python -m reference
# --explore --lesson failed-resurrect`) runs `clear(7)` and `update_status(7, Failed)` on two
# real threads under [frontrun](https://pypi.org/project/frontrun/)'s DPOR scheduler, which
# runs every interleaving of their shared accesses and checks the property after each. It
# runs in a child process (frontrun patches `threading` while it works), in well under a
# second here. Two properties: `late-failed-after-clear` (what the fix claims) and
# `atomic-against-clear` (a Failed that started while the room was still there: not claimed).
#
# **Predict before you run:** on the buggy form, after how many interleavings does the
# explorer find a counterexample? On the fixed form, does `atomic-against-clear` hold?

# %%
show(exercises.explorations("failed-resurrect", reference.buggy))

# %%
show(exercises.explorations("failed-resurrect", reference.fixed))

# %% [markdown]
# The buggy form fails on the very first interleaving (every order that runs `clear()` first
# re-creates the room). The fixed form holds the claimed property over every interleaving;
# the residual one still breaks: the fix checks `room not in request_status` and writes
# later, with no lock shared with `clear()`, so a `clear()` that lands between the two lets
# the Failed re-create the room. Closing that needs `clear()` and `update_status` under one
# lock; upstream's fix does not claim it.

# %% [markdown]
# ## 7. What the fix leaves open
#
# **The reused room.** Request A on room 7 is cleared; request B reuses room 7; A's late abort
# arrives. Whether B is hurt depends only on whether the abort lands before or after B opens
# the room. Here is the "after" order, on both forms.
#
# **Predict before you run:** after B opened room 7 and A's late abort arrives, what does B
# read on the fixed form?

# %%
print(resurrect.both_forms_reused("abort-after-open"))

# %% [markdown]
# Once B has opened room 7 the room is present, and a Failed write for a present room still
# overwrites it, in both forms. This is exactly the pollution the PR describes, and [#24539](https://github.com/sgl-project/sglang/pull/24539) does
# not prevent it: the manager cannot tell A's news from B's, because both are keyed by the same
# room. (The other order is the exercise below.)
#
# **Failed is not terminal.** For a present room, any later non-Failed write goes through
# `max()`, and `max(Failed, x)` is `x`: a slow status update can un-fail a failed request.
#
# **Predict before you run:** room 7 is WaitingForInput, is failed, then a slow Transferring
# write arrives. What does it read on each form?

# %%
show({form.__name__: resurrect.failed_then_lifted(form) for form in (reference.buggy, reference.fixed)})

# %% [markdown]
# This was flagged in the upstream review of [PR #19205](https://github.com/sgl-project/sglang/pull/19205). Making Failed terminal (and letting
# only Bootstrapping or WaitingForInput create an entry) is what a fuller fix would do. Later
# sglang releases did both: in [0.5.23](https://pypi.org/project/sglang/0.5.23/)'s wheel,
# `CommonKVManager.update_status` creates a room only with an opening status and returns early
# for a room that is Failed; 0.5.19's still has neither. (The version matrix,
# `reference/upstream/VERSIONS.md`, dates the opening-status rule to 0.5.20.) Also still open
# after #24539: `request_status` has no lock, so `clear()` and `update_status` on two threads
# can interleave between the `in` check and the write (the explorer's `atomic-against-clear`
# above).

# %% [markdown]
# ## 8. Exercise
#
# Predict, then check. The checker runs the experiment live on both forms and compares.

# %%
print(resurrect.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b" or "c"

# %%
show(resurrect.check_exercise(ANSWER))

# %% [markdown]
# ## 9. Tempting wrong fixes
#
# Your own fix was judged in section 4, before the answer; now the fixes that look right and are not.
#
# ### A tempting wrong fix
#
# Leave `update_status` alone and make `clear()` keep a Failed *tombstone* for the room
# instead of removing it: a late Failed then finds the room present, and "nothing is
# resurrected". Run it as written.
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem? And the explorer?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: a tombstone instead of removal
class TombstoneKVManager(reference.buggy.KVManager):
    def clear(self, bootstrap_room: int) -> None:
        self.request_status[bootstrap_room] = KVPoll.Failed


# %%
show(
    exercises.check_fix(
        "failed-resurrect", exercises.variant_from({"KVManager": TombstoneKVManager}), explore=True
    )
)

# %% [markdown]
# Rejected: the tombstone *is* the leak, under another name: the table still grows by one
# entry per finished request, and the check reads the table, not the code path. The
# explorer says the same from the other side: the first interleaving it runs already ends
# with room 7 in the table after `clear()` returned (its trace shows the tombstone written by
# `clear()` itself). (The lesson's gallery of wrong fixes, in
# `reference/lessons/failed_resurrect/`, has more.)

# %% [markdown]
# ## Discussion questions
#
# 1. The fix drops a Failed for an absent room. Which legitimate writer could want to create a
#    room with Failed, and what would it lose? (Hint: who opens a room, and with which status?)
# 2. The explorer's `atomic-against-clear` breaks on the fixed form. Sketch the smallest change
#    that closes it. What does it cost on the hot path (`update_status` runs for every status
#    change of every request)?
# 3. Rooms can be chosen by users and reused. Section 7 shows a late abort from request A
#    failing request B. What would the manager need to know to tell A's news from B's?
# 4. `max(Failed, x) == x`: which upstream code path could write a non-Failed status after a
#    Failed for the same room, and would making Failed terminal break any of them?
# 5. Upstream added no test with the fix. Which of this notebook's checks would you have sent
#    with the PR, and which is cheapest to keep in CI?

# %% [markdown]
# ## Recap
#
# - `clear()` is the only thing that removes a room; before #24539 any late `update_status`
#   for a cleared room re-created it, so every late abort leaked one entry, for good.
# - The fix (six lines upstream, four of them a comment) drops a Failed write for an absent
#   room; writes for present rooms keep their meaning. In sglang it first shipped in 0.5.12.
# - The scenario shows the leak in one order; the explorer checks every interleaving of
#   `clear()` and a late Failed: the claimed property holds on the fixed form, the stronger
#   one (a Failed racing `clear()`) does not, because no lock spans the check and the write.
# - Still open after the fix: a reused room polluted by a late abort that lands after it opens,
#   and `max()` un-failing a failed room.

# %% [markdown]
# ## Going further
#
# - `python -m reference --lesson failed-resurrect` prints both verdicts; `--impl my.module`
#   runs the scenario against your own `KVManager`.
# - `tests/test_failed_resurrect_machine.py` is a Hypothesis state machine over open / write / clear /
#   late Failed: it finds the resurrection in the buggy manager and finds none in the
#   fixed one.
