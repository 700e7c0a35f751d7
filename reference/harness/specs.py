"""A variant as named on the command line, loadable later: shipped, `--impl` or `--sglang`.

It sits above both `reference/variants.py` (shipped and `--impl` modules) and the upstream
adapter (`reference/upstream/`, which builds on `variants.py`), so neither imports the
other's loader and there is no import circle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from reference.upstream import load_sglang
from reference.variants import Variant, load_impl, shipped


@dataclass(frozen=True)
class VariantSpec:
    """How to load a variant, without loading it: what an isolated worker receives
    (`reference/harness/isolation.py`), so that importing a user's module happens there."""

    kind: Literal["shipped", "impl", "sglang"]
    target: str  # a shipped name, an --impl module name or path, an --sglang path
    provoke: bool = False  # --sglang --provoke: the expectations of a provoked run

    @property
    def name(self) -> str:
        """As given on the command line (a loaded `--sglang` variant is named by its version)."""
        return self.target

    @property
    def label(self) -> str:
        """The variant as the user asked for it, for one-line messages."""
        return {"shipped": "variant", "impl": "--impl module", "sglang": "--sglang"}[self.kind] + (
            f" {self.target!r}"
        )

    def load(self) -> Variant:
        """Import it here; raises `VariantError` with one line."""
        if self.kind == "shipped":
            return shipped(self.target)
        if self.kind == "impl":
            return load_impl(self.target)
        variant = load_sglang(self.target, provoke=self.provoke)
        return dataclasses.replace(variant, flag=f"--sglang {self.target}")
