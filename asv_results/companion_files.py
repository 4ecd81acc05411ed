"""Where a result file's runner-state companion lives (torch-free; benchmarks.run writes it, the
gate and the dashboard read it): results/<machine>/runner-state/<result file's stem>.state.

Not named like a result file (<stem>.json), which asv tried to load as one: `asv compare` and
`asv publish` printed "Skipping results: could not load .../runner-state/machine.json" for every
such folder. asv reads only *.json files, so a .state file is never its business. Companions
written before (runner-state/<result file name>) are still found here, and moved to the new name
by move_old_companions (benchmarks.run does that before a run), so no recorded state is lost.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR = "runner-state"
SUFFIX = ".state"


def companion_file(result_file: Path) -> Path:
    """Where the companion of `result_file` is written: runner-state/<its stem>.state."""
    result_file = Path(result_file)
    return result_file.parent / STATE_DIR / (result_file.stem + SUFFIX)


def readable_companion(result_file: Path) -> Path:
    """The companion to read for `result_file`: companion_file, or the old name
    (runner-state/<result file name>) where only a companion written before has it."""
    new, old = companion_file(result_file), Path(result_file).parent / STATE_DIR / Path(result_file).name
    # Whatever stands under the old name (a FIFO, a link) is read, so the reader says why it is refused.
    return old if not os.path.lexists(new) and os.path.lexists(old) else new


def move_old_companions(machine_dir: Path) -> list[Path]:
    """Rename every old-named companion under `machine_dir`/runner-state to its new name (one
    already there under the new name wins); the new paths."""
    folder = Path(machine_dir) / STATE_DIR
    moved = []
    for old in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        new = companion_file(Path(machine_dir) / old.name)
        if not new.exists():
            old.rename(new)
            moved.append(new)
    return moved
