"""pytest-xdist's `--dist loadfile` with two changes. The test modules that read the session's
tiny asv run (tests/suite_run.py's run_tiny_suite, ~2.5 min) count as one file, so that run
happens once on one worker instead of once on each worker that gets one of them. And the files
that run asv or compile for real go out first (`--no-loadscope-reorder` keeps this order; xdist's
own puts the files with the most tests first, and left a 90 s single-test file to run alone at the
end): the short files then fill in around them.

xdist's `loadgroup` would say this with marks, but xdist 3.8 puts the group into `item._nodeid`,
which pytest 9 no longer reads: the marks are silently ignored. The scheduler here works on the
node ids the controller already has."""

from pathlib import PurePosixPath

from xdist.scheduler import LoadFileScheduling

# The modules whose fixtures call run_tiny_suite (tests/test_parallel_runs.py checks the list).
TINY_RUN_MODULES = ("test_asv_suite.py", "test_dashboard.py")
TINY_RUN_SCOPE = "tiny asv run: " + " + ".join(TINY_RUN_MODULES)


# The files that take a minute or more, longest first (seconds measured with 2 workers on the
# shared 2-core CI machine, `--durations`): bisect 180, the tiny run 150, aot 100, harness
# history 90, layering 80; the README's asv commands 37. A file not named here goes after them.
LONG_FILES_FIRST = ("test_bisect.py", "test_asv_suite.py", "test_dashboard.py", "test_aot.py",
                    "test_harness_history.py", "test_layering.py", "test_asv_commands.py")


def long_files_first(items: list) -> None:
    """Sort collected items in place (stable: a file's tests keep their order)."""
    rank = {name: i for i, name in enumerate(LONG_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


class SharedRunFileScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return TINY_RUN_SCOPE if PurePosixPath(path).name in TINY_RUN_MODULES else path
