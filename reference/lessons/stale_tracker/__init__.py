"""Lesson `stale-tracker`: see README.md in this folder."""

from reference.lessons.stale_tracker.scenario import LESSON

__all__ = ["LESSON"]
