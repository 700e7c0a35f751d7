"""`reference.teaching.bench` reads the committed benchmark results as they are."""

import pytest

from reference.teaching import bench

PNG = b"\x89PNG\r\n\x1a\n"


def test_tables_from_the_committed_results():
    summary, overhead, recovery = (bench.load(name) for name in ("summary", "overhead", "recovery"))
    assert "logical CPUs" in bench.machine(summary)
    table = bench.overhead_table(overhead).splitlines()
    assert table[0].split()[:3] == ["case", "buggy", "fixed"]
    assert len(table) == 1 + len(overhead["pairs"])
    table, _, notes = bench.recovery_table(recovery).partition("\n\n")
    rows = table.splitlines()
    assert len(rows) == 1 + sum(len(s["variants"]) for s in recovery["sweeps"])
    assert max(len(line) for line in bench.recovery_table(recovery).splitlines()) <= 120, "fits 120 columns"
    assert all(s["sockets"] in notes for s in recovery["sweeps"]), "each socket setting spelled out under it"
    targets = bench.targets(summary)
    assert targets.count("\n    verdict:  ") == len(summary["targets"]), "each verdict under its own target"
    split = [row.split()[-3:] for row in rows[1:]]
    assert all(a.isdigit() and slash == "/" and b.isdigit() for a, slash, b in split), "failures split"


def test_missing_results_get_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"run `python -m benchmarks`"):
        bench.load("overhead", tmp_path)


def test_pictures_are_redrawn_from_the_data():
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    for draw, name in (
        (bench.overhead_picture, "overhead"),
        (bench.recovery_picture, "recovery"),
        (bench.detection_picture, "detection"),
    ):
        assert draw(bench.load(name))._repr_png_().startswith(PNG)
