"""Check `rendezvous-abort-told` (configuration `prefill_complete`, 0.5.23:
`reference/upstream/configured/failed_resurrect_rendezvous.py`).

Its verdict is pinned on the unmodified 0.5.23 tree (`ok`) and on the two mutants of
`CommonKVReceiver.abort` it was written for (`bug`; `reference/upstream/trees.py` makes the
trees): the deleted `ensure_abort_notified()` (a request the decode gives up on while the
prefill runs its forward is never told to the prefill) and the deleted `return` of the
not-owner branch (a cleared receiver's late abort tells the prefill, whose room may belong
to the next request). The receivers' `init` really ran under the policy (fetched the
prefill's ranks, sent BOOTSTRAP): the tracer sees both lines run, and the BOOTSTRAP send.
0.5.19 has no such policy and does not offer the configuration."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from upstream_trace import traced
from upstream_wheels import NEWEST, wheel

from reference.harness.lesson import run_check
from reference.lessons import LESSONS, Options
from reference.upstream import load_sglang
from reference.upstream.trees import Edit, make_tree

LESSON = LESSONS["failed-resurrect"]
CHECK = next(check for check in LESSON.checks if check.id == "rendezvous-abort-told")
PREFIX = f"<sglang-{NEWEST}>/sglang/srt/disaggregation/"

# The mutants of 0.5.23 (`mutation/0.5.23.log`) the check kills, as hand edits.
ABORT_NOT_TOLD = Edit(
    "common/conn.py",
    "            self.conclude_state = KVPoll.Failed\n        self.ensure_abort_notified()\n\n",
    "            self.conclude_state = KVPoll.Failed\n        pass\n\n",
)
NOT_OWNER_GOES_ON = Edit(
    "common/conn.py",
    "        if not self._owns_bootstrap_room:\n"
    "            self.conclude_state = KVPoll.Failed\n"
    "            return\n",
    "        if not self._owns_bootstrap_room:\n"
    "            self.conclude_state = KVPoll.Failed\n"
    "            pass\n",
)
MUTANTS = {"ensure_abort_notified deleted": ABORT_NOT_TOLD, "not-owner return deleted": NOT_OWNER_GOES_ON}
# (line, text) of 0.5.23's common/conn.py the check runs: the two mutated lines, and
# init's BOOTSTRAP send under the policy (the receivers really bootstrapped).
RUN = {
    (2958, "return"),
    (2963, "self.ensure_abort_notified()"),
    (2577, 'b"BOOTSTRAP",'),
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rendezvous-abort-trees")


def _verdict(path: Path) -> tuple[str, str]:
    result = run_check(LESSON, CHECK, load_sglang(str(path)), Options())
    return result.verdict, result.symptom


def test_ok_on_the_unmodified_release() -> None:
    verdict, symptom = _verdict(wheel(NEWEST))
    assert verdict == "ok", symptom
    assert symptom.startswith("configuration prefill_complete:")


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_bug_on_the_mutants_it_was_written_for(mutant: str, trees: Path) -> None:
    path = make_tree(wheel(NEWEST), trees / mutant.replace(" ", "-"), (MUTANTS[mutant],))
    verdict, symptom = _verdict(path)
    assert verdict == "bug", symptom
    assert "ABORT" in symptom


def test_the_check_runs_the_upstream_lines_it_was_written_for() -> None:
    with zipfile.ZipFile(wheel(NEWEST)) as whl:
        source = whl.read("sglang/srt/disaggregation/common/conn.py").decode().splitlines()
    assert {(line, source[line - 1].strip()) for line, _ in RUN} == RUN
    with traced(PREFIX) as (lines, _called):
        verdict, symptom = _verdict(wheel(NEWEST))
    assert verdict == "ok", symptom
    assert {("common/conn.py", line) for line, _ in RUN} <= lines


def test_not_offered_before_the_policy() -> None:
    verdict, symptom = _verdict(wheel("0.5.19"))
    assert verdict == "unknown" and "no configuration 'prefill_complete'" in symptom
