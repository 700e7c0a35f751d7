"""The operators of the upstream mutation run (`reference/upstream/mutate.py`), on a
small class: each semantic operator and each of mutmut's yields the change it names;
only the survivors that cannot change behaviour are classed equivalent
(`survivors.py`); a run's log is summed up with equivalents left out of the rate and
every other survivor listed as a gap; bad input is one line."""

from __future__ import annotations

import ast

import pytest

from reference.upstream.mutate import _plan, all_mutants, main, mutants
from reference.upstream.survivors import classify

SOURCE = '''
class CommonKVManager:
    def update_status(self, room, status):
        """Docstring."""
        with self.connection_lock:
            rooms = list(self.tracker)
        if status == KVPoll.Failed and room not in self.request_status:
            return
        self._task = self._loop.create_task(self._cleanup())
        self.request_status[room] = max(status, 1)
        logger.info("done")
'''


def _by_operator() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for mutant in mutants(SOURCE, "common/conn.py", "CommonKVManager", "update_status", "failed-resurrect"):
        ast.parse(mutant.text)  # every mutant is valid Python
        found.setdefault(mutant.operator, []).append(mutant.text)
    return found


def test_every_operator_makes_its_change() -> None:
    found = _by_operator()
    assert any("if True:" in t and "with self.connection_lock" not in t for t in found["remove a lock"])
    assert any("status is KVPoll.Failed" in t for t in found["== -> is"])
    assert any("rooms = self.tracker" in t for t in found["weaken: list(x) -> x"])
    assert any(
        "        self._loop.create_task(self._cleanup())\n" in t for t in found["weaken: drop the held task"]
    )
    assert any("if not (status == KVPoll.Failed and" in t for t in found["move a guard: if not"])
    assert any("status != KVPoll.Failed" in t for t in found["Eq -> NotEq"])
    assert any("room in self.request_status" in t for t in found["NotIn -> In"])
    assert any(" or room not in" in t for t in found["and <-> or"])
    assert any("max(status, 2)" in t for t in found["int + 1"])
    assert len(found["delete a statement"]) >= 4


def _classed(operator: str, line: str) -> str:
    return classify(operator, line, "failed-resurrect")


def test_only_behaviour_free_survivors_are_equivalent() -> None:
    assert _classed("delete a statement", '"""Docstring."""').startswith("equivalent")
    assert _classed("delete a statement", 'logger.info("x")').startswith("equivalent")
    assert _classed("== -> is", "if status == KVPoll.Failed:").startswith("equivalent")
    assert _classed("is -> ==", "if self.bootstrap_infos is None:").startswith("equivalent")
    assert _classed("delete a statement", "session = None").startswith("equivalent")
    # `is` on two lists is not `==`: the cache's identity test is not equivalent
    identity = "if self.kv_mgr.connection_pool.get(key) is bootstrap_infos:"
    assert _classed("is -> ==", identity).startswith("gap")
    assert _classed("delete a statement", "self.request_status.pop(room)").startswith("gap: no check")
    assert _classed("remove a lock", "with self.connection_lock:").startswith("gap: the default run")


@pytest.mark.parametrize(
    ("body", "judged"),
    [
        # one C-level read or copy, or a lock only the heartbeat thread takes
        ("cached_bootstrap_infos = self.kv_mgr.connection_pool.get(bootstrap_key)", "equivalent"),
        ("addresses = list(self.prefill_info_table.keys())", "equivalent"),
        ("session = self.session_pool[bootstrap_addr]", "equivalent"),
        # a write another thread's iteration can meet, a check-then-act, a section of many steps
        ("cached_bootstrap_infos = self.kv_mgr.connection_pool.setdefault(", "gap"),
        ("for bootstrap_key, bootstrap_infos in self._connection_pool_entries.items():", "gap"),
        ("keys_to_remove = [", "gap"),
        ("sock.send_multipart(", "gap"),
    ],
)
def test_a_removed_lock_is_equivalent_only_where_no_thread_can_split_it(body: str, judged: str) -> None:
    why = classify("remove a lock", "with self.kv_mgr.connection_lock:", "stale-bootstrap", "", body)
    assert why.startswith(judged), why


def test_a_log_is_summed_up_with_equivalents_out_of_the_rate(tmp_path, capsys) -> None:
    from upstream_wheels import wheel

    release = wheel("0.5.19")
    log = tmp_path / "run.log"
    # mutant 1: killed; 7: `==` -> `is` on a KVPoll (equivalent); 21: a removed lock (a gap)
    log.write_text(
        "1/243 killed       CommonKVManager.update_status:366 move a guard: if not | x: ok -> bug\n"
        "7/243 survived     CommonKVManager.update_status:371 == -> is\n"
        "21/243 survived     CommonKVManager._handle_node_failure:1135 remove a lock\n"
    )
    assert main([str(release), "--from-log", str(log)]) == 0
    text = capsys.readouterr().out
    assert "3 of 243 mutants judged; 1 killed, 2 survived, of which 1 equivalent" in text
    assert "**1 of 2 non-equivalent mutants killed (50.0%)**" in text
    assert "| remove a lock |" in text and "gap: the default run" in text


@pytest.mark.parametrize("args", [["no-such.whl"], ["--from-log", "no-such.log"]])
def test_bad_input_is_one_line(args, tmp_path, capsys) -> None:
    if args[0] == "--from-log":
        from upstream_wheels import wheel

        args = [str(wheel("0.5.19")), *args]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no such" in err


def test_resume_keeps_the_detected_and_only_reopens_the_asked(tmp_path) -> None:
    import argparse

    log = tmp_path / "run.log"
    log.write_text("1/3 killed       A.m:1 op | x\n2/3 survived     A.m:2 op\n3/3 ok           A.m:3 op\n")
    resume = argparse.Namespace(resume=log, only=[])
    todo, kept = _plan(resume, 3)
    assert todo == [1, 2] and list(kept) == [0]  # a survivor, and the older log's `ok`, judged again
    todo, kept = _plan(argparse.Namespace(resume=log, only=[1]), 3)
    assert todo == [0] and sorted(kept) == [1, 2]  # only mutant 1 judged, every other line kept


@pytest.mark.slow
@pytest.mark.timeout(300)  # the unmutated tree's default run, then the mutant's
def test_the_deep_stage_judges_a_survivor_with_the_simulation(tmp_path) -> None:
    """0.5.19's `is` -> `==` in `invalidate_cached_bootstrap_infos` passes every hand-built
    check (`--quick`); the default run's simulation restarts a prefill on its own ports,
    where the two differ, and tells it apart."""
    from upstream_wheels import wheel

    release = wheel("0.5.19")
    log = tmp_path / "deep.log"
    every = all_mutants(release)
    index = 1 + next(
        i for i, m in enumerate(every) if m.operator == "is -> ==" and "is bootstrap_infos" in m.before
    )
    assert main([str(release), "--only", str(index), "--deep", "--jobs", "1", "--log", str(log)]) == 0
    (line,) = log.read_text().splitlines()
    assert " killed " in line and "stale-bootstrap/simulation: ok -> bug" in line, line
