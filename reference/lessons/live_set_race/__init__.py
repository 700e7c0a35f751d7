"""Lesson `live-set-race`: see README.md in this folder."""

from reference.lessons.live_set_race.scenario import LESSON

__all__ = ["LESSON"]
