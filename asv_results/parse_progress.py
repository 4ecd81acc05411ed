"""The first parse's progress on the console: a large history takes minutes to parse, and a
server or a gate that says nothing meanwhile looks hung.

    parsed 1,200 of 5,000 result files (41 files/s, about 93 s left)

asv_results.cache calls it after each batch it parses; it writes a line at most every
``every_s`` seconds, and only when at least ``min_files`` files are to be parsed (a warm start
or a small folder stays quiet).
"""

from __future__ import annotations

import sys
import time


class ConsoleProgress:
    def __init__(self, stream=None, min_files: int = 200, every_s: float = 2.0):
        self.stream = stream
        self.min_files = min_files
        self.every_s = every_s
        self._last = float("-inf")

    def __call__(self, done: int, total: int, elapsed_s: float) -> None:
        if total < self.min_files:
            return
        now = time.monotonic()
        if done < total and now - self._last < self.every_s:
            return
        self._last = now
        rate = done / elapsed_s if elapsed_s > 0 else 0.0
        left = f", about {(total - done) / rate:.0f} s left" if rate and done < total else ""
        print(f"parsed {done:,} of {total:,} result files ({rate:.0f} files/s{left})",
              file=self.stream or sys.stderr, flush=True)
