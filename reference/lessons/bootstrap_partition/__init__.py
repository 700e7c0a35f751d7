"""Lesson `bootstrap-partition`: see README.md in this folder."""

from reference.lessons.bootstrap_partition.scenario import LESSON

__all__ = ["LESSON"]
