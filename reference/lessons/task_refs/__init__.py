"""Lesson `task-refs`: see README.md in this folder."""

from reference.lessons.task_refs.scenario import LESSON

__all__ = ["LESSON"]
