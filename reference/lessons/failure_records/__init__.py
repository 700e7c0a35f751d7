"""Lesson `failure-records`: see README.md in this folder."""

from reference.lessons.failure_records.scenario import LESSON

__all__ = ["LESSON"]
