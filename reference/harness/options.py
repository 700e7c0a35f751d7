"""How a lesson or check is run: the options the CLI and tests pass to every scenario."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    transport: str = "mock"
    seed: int = 0
    repeat: int = 0  # > 0: also run the lesson's stress mode, this many trials
    backend: str = "default"  # KV data plane (reference/dataplane) for lessons that move KV bytes
    sockets: str = "upstream"  # decode PUSH-socket options (reference/transport/sockets.py)
    provoke: bool = False  # upstream adapter: add the trigger its wiring lacks (see reference/upstream)
    check: str | None = None  # run only this check of each lesson (`--check`); None: all
    quick: bool = False  # `--quick`: the story and the hand-built checks only, no deep checks
    # Seconds this lesson's deep checks (simulation, explorations) may take; 0, the library's
    # default, runs none (the CLI and `pytest --impl` give every lesson its share of `--budget`).
    budget: float = 0.0

    @property
    def deep(self) -> bool:
        """Whether the deep checks run."""
        return not self.quick and self.budget > 0
