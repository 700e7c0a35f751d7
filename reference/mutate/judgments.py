"""The hand-read verdict on every surviving mutant, keyed by `Mutant.key`: `equivalent`
with the argument why no execution can tell it from the unmutated variant, or `gap`
with the check that would catch it. `RESULTS.md` prints each with its diff."""

from __future__ import annotations

JUDGMENTS: dict[str, tuple[str, str]] = {}
