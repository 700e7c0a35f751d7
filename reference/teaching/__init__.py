"""What the notebooks import: the pieces a walk through each fix needs.

Notebooks in `notebooks/` hold prose and calls only; every helper they use lives here
so that it is typed, linted and tested like the rest of the package:

- `runs`: run a lesson against the shipped variants and print its verdicts;
- `diffs`: the real `reference/buggy` -> `reference/fixed` diff, filtered by lesson;
- `sources`: real source in a cell (a function as written; a method whole, before and after);
- `explorer`: the interleaving explorer's verdicts and counterexample traces (a child process);
- `tour`: one request through every component, step by step, its messages recorded;
- `sequences` and `plots`: interleavings as sequence pictures, scenario timelines and
  counters as charts (matplotlib, drawn headless with the Agg canvas);
- one module per lesson (`resurrect`, `live_set`, `stale`, `tasks`) with live experiments for
  "what the fix leaves open" and the checker of the lesson's exercise.

matplotlib is needed only by `plots` (the `notebooks` extra).
"""
