"""Lesson `failed-resurrect`: see README.md in this folder."""

from reference.lessons.failed_resurrect.scenario import LESSON

__all__ = ["LESSON"]
