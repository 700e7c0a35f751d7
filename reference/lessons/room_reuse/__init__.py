"""Lesson `room-reuse`: see README.md in this folder."""

from reference.lessons.room_reuse.scenario import LESSON

__all__ = ["LESSON"]
