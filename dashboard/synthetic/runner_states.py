"""The runner-state companions of a synthetic history, as benchmarks.run records them beside each
result (asv_results/companion_files.py names the file): the driver goes 570 -> 575 and the
power limit 700 -> 600 W from one commit on, what the gate classifies as a runner-wide change.
Shared by the demo history and the tests, so both write what benchmarks.run writes."""

from __future__ import annotations

import json

from asv_results.companion_files import companion_file


def snapshot(new: bool) -> dict:
    """One runner-state snapshot, before (``new`` false) or after the runner's change."""
    return {"recorded": True, "software": {"driver": "575.51" if new else "570.86", "torch": "2.11.0",
                                           "triton": "3.6.0"},
            "gpus": [{"name": "NVIDIA H200", "power_limit_w": 600.0 if new else 700.0,
                      "power_violation_ns": 0, "thermal_violation_ns": 0}]}


def write_runner_states(history, at: int) -> None:
    """A companion for every commit of ``history`` (an asv_history.History), changed from commit
    index ``at`` on."""
    for i, commit in enumerate(history.commits):
        path = companion_file(history.results_dir / history.machine / f"{commit[:8]}-{history.env_name}.json")
        path.parent.mkdir(exist_ok=True)
        state = snapshot(i >= at)
        path.write_text(json.dumps({"start": state, "end": state}))
