"""Lesson `restart-recovery`: see README.md in this folder."""

from reference.lessons.restart_recovery.scenario import LESSON

__all__ = ["LESSON"]
