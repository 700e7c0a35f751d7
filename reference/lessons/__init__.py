"""The lesson registry: one scenario module per upstream fix, in teaching order, then the
residual lessons (holes those fixes leave open; `reference/hardened` closes them)."""

from reference.harness.lesson import Lesson, Options, run_lesson
from reference.lessons import (
    bootstrap_partition,
    failed_resurrect,
    failure_records,
    late_kv_write,
    live_set_race,
    restart_recovery,
    room_reuse,
    stale_bootstrap,
    stale_tracker,
    supervised_loops,
    task_refs,
)

LESSONS: dict[str, Lesson] = {
    lesson.id: lesson
    for lesson in (
        failed_resurrect.LESSON,
        live_set_race.LESSON,
        stale_bootstrap.LESSON,
        task_refs.LESSON,
        restart_recovery.LESSON,
        room_reuse.LESSON,
        failure_records.LESSON,
        stale_tracker.LESSON,
        supervised_loops.LESSON,
        late_kv_write.LESSON,
        bootstrap_partition.LESSON,
    )
}

__all__ = ["LESSONS", "Lesson", "Options", "run_lesson"]
