"""pytest-xdist's `--dist loadfile` with one change: the test modules that read the session's
tiny asv run (tests/suite_run.py's run_tiny_suite, ~70 s) count as one file, so that run happens
once on one worker instead of once on each worker that gets one of them.

xdist's `loadgroup` would say this with marks, but xdist 3.8 puts the group into `item._nodeid`,
which pytest 9 no longer reads: the marks are silently ignored. The scheduler here works on the
node ids the controller already has."""

from pathlib import PurePosixPath

from xdist.scheduler import LoadFileScheduling

# The modules whose fixtures call run_tiny_suite (tests/test_parallel_runs.py checks the list).
TINY_RUN_MODULES = ("test_asv_suite.py", "test_dashboard.py")
TINY_RUN_SCOPE = "tiny asv run: " + " + ".join(TINY_RUN_MODULES)


class SharedRunFileScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return TINY_RUN_SCOPE if PurePosixPath(path).name in TINY_RUN_MODULES else path
