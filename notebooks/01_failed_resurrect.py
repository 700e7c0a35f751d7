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
# What you will do, in about an hour: read what upstream saw, draw the interleaving, run the
# buggy form and watch the leak, read the fix as the real diff, run the fixed form, then look at
# what the fix leaves open and answer one question. Every cell runs the reference components in
# `reference/` on the in-process mock transport; nothing here needs a GPU or a network.

# %%
import reference.buggy
import reference.fixed
from reference.lessons.failed_resurrect import teaching as resurrect
from reference.status import KVPoll
from reference.teaching import diffs, exercises, plots, runs, sequences

# %% [markdown]
# ## 1. The story
#
# In PD disaggregation every request owns a `bootstrap_room`, and each side keeps the room's
# transfer status in a table, `request_status`, inside its KV manager. A status is a `KVPoll`, a
# plain int whose order matters: `update_status` keeps `max(old, new)` for every write except
# Failed, and the decode scheduler min-reduces statuses across tensor-parallel ranks so that one
# failed rank fails them all. That is why Failed is the *smallest* value:

# %%
[(status.name, int(status)) for status in KVPoll]

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
# No test was added; the PR relied on the existing CI. Section 6 checks the second claim
# honestly: it is only half right, and the half that is right is not covered by the fix.

# %% [markdown]
# ## 2. The interleaving
#
# Room 7 runs normally, the scheduler clears it, and then the abort path, too late, writes
# Failed. In the buggy form `update_status` has no idea the room was cleared:

# %%
plots.sequence_picture(sequences.interleaving("failed-resurrect", "buggy"))

# %%
plots.sequence_picture(sequences.interleaving("failed-resurrect", "fixed"))

# %% [markdown]
# ## 3. The buggy form, live
#
# The lesson's scenario (`reference/lessons/failed_resurrect/scenario.py`) runs 8 rooms through their
# normal life (Bootstrapping, WaitingForInput, sometimes Success), clears each one, then
# delivers the late abort, and reads the table. Its verdict comes from what is in the table,
# never from which form it was given. The command-line equivalent is
# `python -m reference --lesson failed-resurrect --variant buggy`.

# %%
buggy = runs.run("failed-resurrect", "buggy")
print(runs.verdict_line(buggy))
buggy.details

# %% [markdown]
# Every cleared room came back as Failed, and the table grew by one with each late abort. In a
# server that runs for weeks, that is a slow leak proportional to the number of aborted
# requests, and every entry looks like a legitimate failure.

# %% [markdown]
# ## 4. The fix, as the real diff
#
# `reference/buggy/manager.py` and `reference/fixed/manager.py` share their line structure, so
# their diff *is* the upstream fix. Here are the hunks tagged with this lesson, read from the
# files now (the same as `diff -u reference/buggy/manager.py reference/fixed/manager.py`):

# %%
diffs.fix_diff("failed-resurrect")

# %% [markdown]
# An absent room means "cleared, or never opened". A request opens its room with Bootstrapping
# (or WaitingForInput), never with Failed, so a Failed write for an absent room can only be
# late news about a request that is gone: dropping it is safe. Writes for present rooms keep
# their old meaning.

# %% [markdown]
# ## 5. The fixed form, live

# %%
fixed = runs.run("failed-resurrect", "fixed")
print(runs.verdict_table([buggy, fixed]))

# %%
plots.series_picture(
    [buggy, fixed],
    "sizes",
    "request_status after each late abort (every room was cleared first)",
    xlabel="late aborts delivered",
    ylabel="entries in request_status",
)

# %% [markdown]
# ## 6. What the fix leaves open
#
# **The reused room.** Request A on room 7 is cleared; request B reuses room 7; A's late abort
# arrives. Whether B is hurt depends only on whether the abort lands before or after B opens
# the room. Here is the "after" order, on both forms:

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

# %%
{form.__name__: resurrect.failed_then_lifted(form) for form in (reference.buggy, reference.fixed)}

# %% [markdown]
# This was flagged in the upstream review of [PR #19205](https://github.com/sgl-project/sglang/pull/19205). Making Failed terminal (and letting
# only Bootstrapping or WaitingForInput create an entry) is what a fuller fix would do; we
# have not tied such a change to a release, so we make no claim about which version has it.
# Also still open: `request_status` has no lock, so `clear()` and `update_status` on two threads
# can interleave between the `in` check and the write.

# %% [markdown]
# ## 7. Exercise
#
# Predict, then check. The checker runs the experiment live on both forms and compares.

# %%
print(resurrect.EXERCISE)

# %%
ANSWER = None  # your prediction: "a", "b" or "c"

# %%
resurrect.check_exercise(ANSWER)

# %% [markdown]
# ## 8. Write the fix yourself
#
# The warm-up above asked for a prediction; now write the fix. The next cell is
# the buggy `update_status`, as a
# subclass. Edit it, run it, then run the cell after it: `exercises.variant_from` builds a
# variant from your class (every component you did not write stays `reference.buggy`'s) and
# `exercises.check_fix` runs this lesson's full checklist against it in-process (the same
# checks as `python -m reference --lesson failed-resurrect --impl ...`), one line per check, with the
# claim and what was observed for each one that fails. As committed, it shows `BUG`.
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
exercises.check_fix("failed-resurrect", exercises.variant_from({"KVManager": KVManager}))

# %% [markdown]
# ### A tempting wrong fix
#
# Leave `update_status` alone and make `clear()` keep a Failed *tombstone* for the room
# instead of removing it: a late Failed then finds the room present, and "nothing is
# resurrected". Run it as written.
#
# **Predict before you run:** will the checklist accept it? If not, which check names the
# problem?


# %%
# EXERCISE: a tempting wrong fix, to run and see rejected: a tombstone instead of removal
class TombstoneKVManager(reference.buggy.KVManager):
    def clear(self, bootstrap_room: int) -> None:
        self.request_status[bootstrap_room] = KVPoll.Failed


# %%
exercises.check_fix("failed-resurrect", exercises.variant_from({"KVManager": TombstoneKVManager}))

# %% [markdown]
# Rejected: the tombstone *is* the leak, under another name: the table still grows by one
# entry per finished request, and the check reads the table, not the code path. (The
# lesson's gallery of wrong fixes, in `reference/lessons/failed_resurrect/`, has more.)

# %% [markdown]
# ## Going further
#
# - `python -m reference --lesson failed-resurrect` prints both verdicts; `--impl my.module`
#   runs the scenario against your own `KVManager`.
# - `tests/test_failed_resurrect_machine.py` is a Hypothesis state machine over open / write / clear /
#   late Failed: it finds the resurrection in the buggy manager and finds none in the
#   fixed one.
