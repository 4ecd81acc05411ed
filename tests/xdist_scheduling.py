"""pytest-xdist's `--dist loadfile` with two changes:
- the test modules that read one of the session's shared asv runs count as one file, so that run
  happens once on one worker instead of once on each worker that gets one of them: the tiny asv
  run (tests/suite_run.py's run_tiny_suite) and the measured planted history
  (tests/planted_history.py's measured_history, 8 asv runs);
- the files that take minutes start first. xdist hands out files by their count of tests, so a
  file of one long asv test came last and ran alone while the other worker had nothing left.

xdist's `loadgroup` would say this with marks, but xdist 3.8 puts the group into `item._nodeid`,
which pytest 9 no longer reads: the marks are silently ignored. The scheduler here works on the
node ids the controller already has."""

from pathlib import PurePosixPath

from xdist.scheduler import LoadFileScheduling

# The modules whose fixtures call run_tiny_suite (tests/test_parallel_runs.py checks the list).
TINY_RUN_MODULES = ("test_asv_suite.py", "test_dashboard.py")
TINY_RUN_SCOPE = "tiny asv run: " + " + ".join(TINY_RUN_MODULES)
# The modules whose tests take the measured_history fixture (tests/test_parallel_runs.py checks it).
HISTORY_MODULES = ("test_bisect.py", "test_rerun_rehearsal.py")
HISTORY_SCOPE = "planted history: " + " + ".join(HISTORY_MODULES)
SHARED_SCOPES = {**dict.fromkeys(TINY_RUN_MODULES, TINY_RUN_SCOPE), **dict.fromkeys(HISTORY_MODULES, HISTORY_SCOPE)}

# The longest scopes of a CI run, longest first (`PYTEST_ADDOPTS=--durations=0 bash .ci/run`,
# summed per file); every other file follows in xdist's own order.
LONGEST_FIRST = (TINY_RUN_SCOPE, HISTORY_SCOPE, "tests/test_harness_history.py", "tests/test_aot.py",
                 "tests/test_layering.py", "tests/test_asv_commands.py")


class SharedRunFileScheduling(LoadFileScheduling):
    def __init__(self, config, log=None):
        super().__init__(config, log)
        self._longest_moved = False

    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return SHARED_SCOPES.get(PurePosixPath(path).name, path)

    def _assign_work_unit(self, node) -> None:
        """xdist's, from a queue whose longest scopes are moved to its front (once: the queue is
        complete by the first assignment)."""
        if not self._longest_moved:
            for scope in reversed(LONGEST_FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            self._longest_moved = True
        super()._assign_work_unit(node)
