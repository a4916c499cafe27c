"""The progress line calls a retry a retry: one router session per plan step is the normal case."""

import io

from cli.progress import retries_so_far


def test_one_session_per_step_is_not_a_retry():
    assert retries_so_far({"attempts": 2, "plan": {"steps": [{}, {}]}}) == 0


def test_sessions_beyond_the_steps_are_retries():
    assert retries_so_far({"attempts": 4, "plan": {"steps": [{}, {}]}}) == 2


def test_an_operation_without_a_plan_counts_one_step():
    assert retries_so_far({"attempts": 2}) == 1
    assert retries_so_far({}) == 0


def test_the_plain_progress_lines_show_retries_only_when_there_are_some():
    from cli.progress import Progress

    stream = io.StringIO()
    progress = Progress(stream=stream, live=False)
    plan = {"steps": [{}, {}]}
    progress.update({"id": 7, "phase": "on_router", "state": "running", "attempts": 2, "plan": plan}, 1.0)
    progress.update({"id": 7, "phase": "verifying", "state": "running", "attempts": 3, "plan": plan}, 2.0)
    lines = stream.getvalue().splitlines()
    assert "retr" not in lines[0]
    assert lines[1].endswith(", 1 retry (2.0s)")
