"""Semantic mutation testing of the checker: ConMAn-style concurrency and lifecycle mutants
of `reference/fixed` and `reference/hardened`, each judged by the default `--impl` run.

`operators.py` makes the edits (libcst), `mutants.py` turns a variant package into
deduplicated mutants, `runner.py` runs each mutant as a copy of the package through
`python -m reference --impl PATH --json` and compares its verdicts with the unmutated
copy's, `judgments.py` holds the hand-read verdict on every survivor and `report.py`
writes `RESULTS.md` and `results.json`. `python -m reference.mutate --help`.
"""
