"""Lesson `late-kv-write`: see README.md in this folder."""

from reference.lessons.late_kv_write.scenario import LESSON

__all__ = ["LESSON"]
