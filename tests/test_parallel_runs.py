"""CI's parallel test run: files stay whole on one worker and the modules sharing the tiny asv run
stay together (tests/xdist_scheduling.py); no test sees another's environment (tests/conftest.py)."""

import os
import re
from pathlib import Path

from tests.xdist_scheduling import (HISTORY_MODULES, HISTORY_SCOPE, TINY_RUN_MODULES, TINY_RUN_SCOPE,
                                    SharedRunFileScheduling)

TESTS = Path(__file__).resolve().parent


def test_the_shared_modules_are_those_that_call_run_tiny_suite():
    """A new reader of the tiny run must join the list, or a second worker runs asv again."""
    callers = {p.name for p in TESTS.glob("test_*.py") if re.search(r"\brun_tiny_suite\(", p.read_text())}
    assert callers == set(TINY_RUN_MODULES)


def test_the_modules_sharing_the_measured_history_are_those_that_take_it():
    """A new user of the measured_history fixture must join the list, or a second worker measures it again."""
    users = {p.name for p in TESTS.glob("test_*.py") if re.search(r"def test_\w+\([^)]*\bmeasured_history\b", p.read_text())}
    assert users == set(HISTORY_MODULES)


def test_the_shared_modules_are_one_scope_and_every_other_file_its_own():
    scheduling = SharedRunFileScheduling.__new__(SharedRunFileScheduling)  # the scope rule needs no workers
    for modules, scope in ((TINY_RUN_MODULES, TINY_RUN_SCOPE), (HISTORY_MODULES, HISTORY_SCOPE)):
        assert {scheduling._split_scope(f"tests/{m}::test_x[a::b]") for m in modules} == {scope}
    assert scheduling._split_scope("tests/test_ops.py::test_y") == "tests/test_ops.py"
    assert scheduling._split_scope("tests/test_ops.py::TestZ::test_w") == "tests/test_ops.py"


LEAK = "FUSED_MLP_TEST_LEAK"  # no code reads it


def test_a_variable_set_without_monkeypatch_is_there_during_the_test():
    assert LEAK not in os.environ
    os.environ[LEAK] = "set by the test before"  # what benchmarks.run does with its grid


def test_the_next_test_starts_without_it():
    """Runs after the one above (same file, same worker): the conftest put the environment back."""
    assert LEAK not in os.environ


def _hold(folder, alone, seconds, times, name):
    import time

    from tests.cpu_alone import cpu_share

    with cpu_share(folder, alone):
        start = time.monotonic()
        time.sleep(seconds)
        times[name] = (start, time.monotonic())


def test_an_alone_test_waits_for_running_tests_and_later_ones_wait_for_it(tmp_path):
    """Three workers: one running a test, then one asking to run alone, then one more test."""
    import multiprocessing
    import time

    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        times = manager.dict()
        order = [("running", False, 0.6), ("alone", True, 0.3), ("later", False, 0.1)]
        procs = []
        for name, alone, seconds in order:
            procs.append(ctx.Process(target=_hold, args=(tmp_path, alone, seconds, times, name)))
            procs[-1].start()
            time.sleep(0.15)  # each asks after the one before holds its lock
        for p in procs:
            p.join(10)
        got = dict(times)
    assert got["alone"][0] >= got["running"][1]  # not beside the running test
    assert got["later"][0] >= got["alone"][1]  # nor did a later one start beside it


def test_without_xdist_nothing_is_locked():
    from tests.cpu_alone import lock_dir

    class Config:  # the controller's or a plain run's config: no workerinput
        pass

    assert lock_dir(Config()) is None
