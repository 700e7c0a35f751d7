"""Configurations `prefill_complete` and `deferred_release` (`reference/upstream/configs.py`,
`prefill.py`): 0.5.23's deferred decode allocation and deferred KV release, and the four
failed-resurrect checks that run in them.

Each check's verdict is pinned on the unmodified 0.5.23 tree (`ok`) and on a tree with
the mutation it was written for (`bug`; `reference/upstream/trees.py` makes the trees):
`retired-receiver-abort` kills the deleted latch of `CommonKVReceiver.abort`'s
not-owner branch, `prefill-failure-told` the deleted `_notify_bootstrap` of
`CommonKVManager.update_status`'s Failed branch, `reused-room-abort-acked` the deleted reset
of a poisoned room when a new request opens it, `acked-abort-stays-failed` the deleted
return that keeps Failed terminal. Upstream's own `__init__` decides the
configuration (it reads the policy from `get_disagg()`); releases without the policy's
code do not offer it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from upstream_trace import traced
from upstream_wheels import NEWEST, wheel

from reference.harness.lesson import run_check
from reference.lessons import LESSONS, Options
from reference.transport.mock import MockNetwork
from reference.upstream import load_sglang
from reference.upstream.trees import Edit, make_tree

LESSON = LESSONS["failed-resurrect"]
CONFIGURATION = "prefill_complete"

# The mutants of 0.5.23 (`mutation/0.5.23.log`) each check kills, as hand edits.
NOT_OWNER_LATCH = Edit(
    "common/conn.py",
    "        if not self._owns_bootstrap_room:\n"
    "            self.conclude_state = KVPoll.Failed\n"
    "            return\n",
    "        if not self._owns_bootstrap_room:\n            return\n",
)
NOTIFY_ON_FAILED = Edit(
    "common/conn.py",
    "                self._notify_bootstrap(\n"
    "                    bootstrap_room, self.deferred_bootstrap.fail(bootstrap_room)\n"
    "                )\n",
    "                pass\n",
)
POISON_RESET = Edit(
    "common/conn.py",
    "                self._deferred_ack_poisoned_rooms.discard(bootstrap_room)\n",
    "                pass\n",
)
FAILED_TERMINAL = Edit(
    "common/conn.py",
    "            # happily promote it back to Transferring or Success.\n            return\n",
    "            # happily promote it back to Transferring or Success.\n            pass\n",
)
KILLS = {
    "retired-receiver-abort": NOT_OWNER_LATCH,
    "prefill-failure-told": NOTIFY_ON_FAILED,
    "reused-room-abort-acked": POISON_RESET,
    "acked-abort-stays-failed": FAILED_TERMINAL,
}
CONFIGURED = {
    "retired-receiver-abort": CONFIGURATION,
    "prefill-failure-told": CONFIGURATION,
    "reused-room-abort-acked": "deferred_release",
    "acked-abort-stays-failed": "deferred_release",
}
# The upstream line (0.5.23) each check's configuration gates: the not-owner latch of
# `CommonKVReceiver.abort`, the rendezvous notification of `update_status`'s Failed branch,
# the poisoning of a room whose send failed (which the mutated reset would leave behind).
GATED = {
    "retired-receiver-abort": ("common/conn.py", 2957, "self.conclude_state = KVPoll.Failed"),
    "prefill-failure-told": ("common/conn.py", 672, "self._notify_bootstrap("),
    # a room poisoned by an unsettled send (`poison_deferred_ack_room`): what 665's reset clears
    "reused-room-abort-acked": ("common/conn.py", 1084, "self._deferred_ack_poisoned_rooms.add(room)"),
    # a non-Failed status for a Failed room: the early return that keeps Failed terminal
    "acked-abort-stays-failed": ("common/conn.py", 679, "return"),
}
PREFIX = f"<sglang-{NEWEST}>/sglang/srt/disaggregation/"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prefill-complete-trees")


def _check(check_id: str):
    return next(check for check in LESSON.checks if check.id == check_id)


def _verdict(path: Path, check_id: str) -> tuple[str, str]:
    result = run_check(LESSON, _check(check_id), load_sglang(str(path)), Options())
    return result.verdict, result.symptom


@pytest.mark.parametrize("check_id", sorted(KILLS))
def test_ok_on_the_unmodified_release(check_id: str) -> None:
    verdict, symptom = _verdict(wheel(NEWEST), check_id)
    assert verdict == "ok", symptom
    assert symptom.startswith(f"configuration {CONFIGURED[check_id]}:")


@pytest.mark.parametrize("check_id", sorted(KILLS))
def test_bug_on_the_mutant_it_was_written_for(check_id: str, trees: Path) -> None:
    path = make_tree(wheel(NEWEST), trees / check_id, (KILLS[check_id],))
    verdict, symptom = _verdict(path, check_id)
    assert verdict == "bug", symptom


def test_each_mutant_is_seen_by_its_own_check_only(trees: Path) -> None:
    """The two edits are told apart: each leaves the other check `ok`."""
    for check_id, edit in KILLS.items():
        path = make_tree(wheel(NEWEST), trees / f"only-{check_id}", (edit,))
        for other in set(KILLS) - {check_id}:
            verdict, symptom = _verdict(path, other)
            assert verdict == "ok", f"{other} on the tree for {check_id}: {symptom}"


def test_upstreams_init_reads_the_policy() -> None:
    module = load_sglang(str(wheel(NEWEST))).module.CONFIGURATIONS[CONFIGURATION]
    decode = module.KVManager(MockNetwork())
    prefill = module.PrefillKVManager()
    try:
        assert decode.defer_decode_allocation and decode.deferred_bootstrap is None
        assert prefill.defer_decode_allocation and prefill.deferred_bootstrap is not None
        [registration] = prefill.registrations  # its PUT /route tells the bootstrap server
        assert registration["decode_allocation_policy"] == CONFIGURATION
    finally:
        decode.close()
        prefill.close()
    default = load_sglang(str(wheel(NEWEST))).module.KVManager(MockNetwork())
    try:
        assert not default.defer_decode_allocation
    finally:
        default.close()


@pytest.mark.parametrize("check_id", sorted(GATED))
def test_the_check_runs_the_upstream_line_it_was_written_for(check_id: str) -> None:
    path, line, text = GATED[check_id]
    with zipfile.ZipFile(wheel(NEWEST)) as whl:
        source = whl.read(f"sglang/srt/disaggregation/{path}").decode().splitlines()
    assert source[line - 1].strip() == text
    with traced(PREFIX) as (lines, _called):
        verdict, symptom = _verdict(wheel(NEWEST), check_id)
    assert verdict == "ok", symptom
    assert (path, line) in lines


def test_the_default_checks_run_none_of_it() -> None:
    """Upstream's defaults: the lesson's story and default checks never reach those lines."""
    variant = load_sglang(str(wheel(NEWEST)))
    with traced(PREFIX) as (lines, _called):
        for check in LESSON.checklist("mock"):
            if not check.configuration and not check.deep:
                run_check(LESSON, check, variant, Options(quick=True))
    assert not [(path, line) for path, line, _ in GATED.values() if (path, line) in lines]


def test_the_prefill_runs_mooncakes_own_transfer_worker() -> None:
    """Configuration deferred_release: upstream's mooncake prefill `__init__` ran (its
    deferred release on, its transfer worker thread started) and its teardown stops it."""
    module = load_sglang(str(wheel(NEWEST))).module.CONFIGURATIONS["deferred_release"]
    prefill = module.PrefillKVManager()
    workers = list(prefill._worker_threads)
    try:
        assert prefill.enable_deferred_decode_kv_release and not prefill.defer_decode_allocation
        assert workers and all(worker.is_alive() for worker in workers)
    finally:
        prefill.close()
    assert not any(worker.is_alive() for worker in workers)


def test_not_offered_before_the_policy() -> None:
    offered = load_sglang(str(wheel("0.5.19"))).module.CONFIGURATIONS
    assert CONFIGURATION not in offered and "deferred_release" not in offered


# mooncake's sender given a method the prefill-side checks drive, as 0.5.22's has (its own
# `__init__`, `send`, `poll`, `abort`): the adapter's `CommonKVSender` would not be it.
SENDER_POLLS = Edit(
    "mooncake/conn.py",
    "class MooncakeKVSender(CommonKVSender):\n    supports_host_tensor_indices = True\n",
    "class MooncakeKVSender(CommonKVSender):\n    supports_host_tensor_indices = True\n\n"
    "    def poll(self):\n        return super().poll()\n",
)
# its `send` doing more than calling `CommonKVSender.send` (0.5.22's enqueues the transfer itself)
SENDER_SENDS = Edit(
    "mooncake/conn.py",
    "        super().send(\n            kv_indices=kv_indices,\n",
    "        self._record_transfer_indices(kv_indices, state_indices)\n"
    "        super().send(\n            kv_indices=kv_indices,\n",
)


SENDERS = {"own-poll": SENDER_POLLS, "send-does-more": SENDER_SENDS}


@pytest.mark.parametrize("name", sorted(SENDERS))
def test_not_offered_where_mooncakes_sender_is_not_commons(name: str, trees: Path) -> None:
    """The prefill side runs `CommonKVSender` for mooncake's sender (its module does not
    load here); a release whose mooncake sender has its own code for a method the checks
    drive offers neither configuration (0.5.22: `ci/upstream.sh --all`)."""
    path = make_tree(wheel(NEWEST), trees / f"sender-{name}", (SENDERS[name],))
    offered = load_sglang(str(path)).module.CONFIGURATIONS
    assert CONFIGURATION not in offered and "deferred_release" not in offered
    assert "mla" in offered and "staging" in offered
