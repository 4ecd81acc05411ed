"""CI's parallel test run: files stay whole on one worker and the modules sharing the tiny asv run
stay together (tests/xdist_scheduling.py); no test sees another's environment (tests/conftest.py)."""

import os
import re
from pathlib import Path

from tests.xdist_scheduling import TINY_RUN_MODULES, TINY_RUN_SCOPE, SharedRunFileScheduling

TESTS = Path(__file__).resolve().parent


def test_the_shared_modules_are_those_that_call_run_tiny_suite():
    """A new reader of the tiny run must join the list, or a second worker runs asv again."""
    callers = {p.name for p in TESTS.glob("test_*.py") if re.search(r"\brun_tiny_suite\(", p.read_text())}
    assert callers == set(TINY_RUN_MODULES)


def test_the_shared_modules_are_one_scope_and_every_other_file_its_own():
    scheduling = SharedRunFileScheduling.__new__(SharedRunFileScheduling)  # the scope rule needs no workers
    scopes = {m: scheduling._split_scope(f"tests/{m}::test_x[a::b]") for m in TINY_RUN_MODULES}
    assert set(scopes.values()) == {TINY_RUN_SCOPE}
    assert scheduling._split_scope("tests/test_ops.py::test_y") == "tests/test_ops.py"
    assert scheduling._split_scope("tests/test_ops.py::TestZ::test_w") == "tests/test_ops.py"


LEAK = "FUSED_MLP_TEST_LEAK"  # no code reads it


def test_a_variable_set_without_monkeypatch_is_there_during_the_test():
    assert LEAK not in os.environ
    os.environ[LEAK] = "set by the test before"  # what benchmarks.run does with its grid


def test_the_next_test_starts_without_it():
    """Runs after the one above (same file, same worker): the conftest put the environment back."""
    assert LEAK not in os.environ
