"""The lesson registry: one scenario module per upstream fix, in teaching order."""

from reference.harness.lesson import Lesson, Options, run_lesson
from reference.lessons import failed_resurrect, live_set_race, stale_bootstrap, task_refs

LESSONS: dict[str, Lesson] = {
    lesson.id: lesson
    for lesson in (
        failed_resurrect.LESSON,
        live_set_race.LESSON,
        stale_bootstrap.LESSON,
        task_refs.LESSON,
    )
}

__all__ = ["LESSONS", "Lesson", "Options", "run_lesson"]
