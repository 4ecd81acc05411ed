"""CI's parallel test run: files stay whole on one worker and the modules sharing the tiny asv run
stay together (tests/xdist_scheduling.py); no test sees another's environment (tests/conftest.py)."""

import os
import re
from collections import OrderedDict
from pathlib import Path

from tests.xdist_scheduling import (HISTORY_MODULES, HISTORY_SCOPE, LONGEST_FIRST, TINY_RUN_MODULES, TINY_RUN_SCOPE,
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


def test_the_longest_scopes_are_files_that_exist():
    files = [scope for scope in LONGEST_FIRST if scope not in (TINY_RUN_SCOPE, HISTORY_SCOPE)]
    assert files and all((TESTS.parent / f).is_file() for f in files)


def test_the_longest_scopes_are_handed_out_first_and_the_rest_in_xdists_order():
    class Node:
        def __init__(self):
            self.sent = []

        def send_runtest_some(self, indexes):
            self.sent.append(indexes)

    scheduling = SharedRunFileScheduling.__new__(SharedRunFileScheduling)
    scheduling._longest_moved = False
    ids = ["tests/test_many.py::a", "tests/test_many.py::b", "tests/test_few.py::c", f"{LONGEST_FIRST[1]}::d",
           "tests/test_asv_suite.py::e"]
    node = Node()
    scheduling.registered_collections, scheduling.assigned_work = {node: ids}, {}
    scheduling.workqueue = OrderedDict((scope, {i: False for i in ids if scheduling._split_scope(i) == scope})
                                       for scope in dict.fromkeys(scheduling._split_scope(i) for i in ids))
    while scheduling.workqueue:
        scheduling._assign_work_unit(node)
    assert node.sent == [[4], [3], [0, 1], [2]]  # the tiny run, the second longest, then as queued


LEAK = "FUSED_MLP_TEST_LEAK"  # no code reads it


def test_a_variable_set_without_monkeypatch_is_there_during_the_test():
    assert LEAK not in os.environ
    os.environ[LEAK] = "set by the test before"  # what benchmarks.run does with its grid


def test_the_next_test_starts_without_it():
    """Runs after the one above (same file, same worker): the conftest put the environment back."""
    assert LEAK not in os.environ
