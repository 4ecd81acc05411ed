"""How short a history the gate can judge on: the detector on the newest H commits of a long
series against the detector on all of it (regressions/history.py's HISTORY).

    python tools/measure_gate_history.py [--seed 0] [--series 300] [--commits 400] [--histories 31,50,100,150,200]

Series in the noise of tools/measure_regression_detection.py (commit-to-commit noise 1-3 %, 2 % of
runs 15-50 % slow, a third of the series bimodal: a run 6 % high with probability 0.3), each with
a step of 5, 10 or 20 % up or down d commits before the newest (d from 0 to 30) or none. Per H:
how often the windowed gate's word at the newest commit (fail: a clear change there; suspected;
pass) differs from the full history's, how often it fails in one and not the other, and how often the changes present at the newest commit
that lie inside the window differ (position, clear, confirmed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from regressions.statistics import DetectorSettings, detect_changes  # noqa: E402

DELAYS = (0, 0, 0, 1, 2, 3, 5, 8, 12, 20, 30)
STEPS = (0.0, 0.05, -0.05, 0.1, -0.1, 0.2, -0.2)


def series(rng: np.random.Generator, n: int) -> tuple[np.ndarray, int | None]:
    noise = rng.uniform(0.01, 0.03)
    logs = rng.normal(0.0, noise, n)
    if rng.random() < 1 / 3:  # bimodal runner
        logs += np.where(rng.random(n) < 0.3, np.log(1.06), 0.0)
    slow = rng.random(n) < 0.02
    logs[slow] += np.log(rng.uniform(1.15, 1.5, int(slow.sum())))
    step = float(rng.choice(STEPS))
    at = None
    if step:
        at = n - 1 - int(rng.choice(DELAYS))
        logs[at:] += np.log1p(step)
    return np.exp(logs) * 1e-3, at


def words(changes, n: int, lo: int) -> tuple[str, frozenset]:
    """The gate's word at the newest commit, and the present changes at positions >= lo."""
    at_newest = [c for c in changes if c.present_at_newest and c.index == n - 1]
    word = "fail" if any(c.clear for c in at_newest) else "suspected" if at_newest else "pass"
    present = frozenset((c.index, c.clear, c.confirmed, c.relative_change > 0)
                        for c in changes if c.present_at_newest and c.index >= lo)
    return word, present


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--series", type=int, default=300)
    p.add_argument("--commits", type=int, default=400)
    p.add_argument("--histories", default="31,50,100,150,200")
    args = p.parse_args(argv)
    histories = [int(h) for h in args.histories.split(",")]
    rng = np.random.default_rng(args.seed)
    settings = DetectorSettings()
    word_diff = {h: 0 for h in histories}
    set_diff = {h: 0 for h in histories}
    fail_diff = {h: 0 for h in histories}
    for _ in range(args.series):
        values, _ = series(rng, args.commits)
        n = len(values)
        full = detect_changes(values, settings)
        for h in histories:
            # positions from the newest commit, as the window's
            cut = [c.__class__(**{**c.__dict__, "index": c.index + n - h}) for c in detect_changes(values[-h:], settings)]
            lo = n - h + settings.window  # a change within a window of the cut has another window before it
            if words(full, n, lo)[0] != words(cut, n, lo)[0]:
                word_diff[h] += 1
            if (words(full, n, lo)[0] == "fail") != (words(cut, n, lo)[0] == "fail"):
                fail_diff[h] += 1
            if words(full, n, lo)[1] != words(cut, n, lo)[1]:
                set_diff[h] += 1
    print(f"{args.series} series of {args.commits} commits, seed {args.seed}")
    print("history | the gate fails at the newest commit in one and not the other | its word there differs "
          "(fail, suspected, pass) | present changes in the window differ")
    for h in histories:
        print(f"{h:7d} | " + " | ".join(f"{d[h]:4d} ({d[h] / args.series:.1%})" for d in (fail_diff, word_diff, set_diff)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
