"""Why did it fail: the schedule an episode received, its replay, and shrinking it.

The schedule model itself is pure and lives with the engine (`chaosproxy.faults.schedule`);
this package reads and writes schedule files, rebuilds received schedules from
calls.jsonl, re-runs episodes in-process and shrinks failing schedules (docs/schedules.md).
"""
