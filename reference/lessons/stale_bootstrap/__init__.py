"""Lesson `stale-bootstrap`: see README.md in this folder."""

from reference.lessons.stale_bootstrap.scenario import LESSON

__all__ = ["LESSON"]
