"""Lesson `supervised-loops`: see README.md in this folder."""

from reference.lessons.supervised_loops.scenario import LESSON

__all__ = ["LESSON"]
