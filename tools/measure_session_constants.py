"""Measure, on this machine, the per-process constants of benchmarks/session_cost.py: a Python
start, `import torch`, the Python check, the machine registration, benchmarks.run's imports, a
runner-state snapshot, a git call, one asv run's own cost (its wall time less the durations
asv recorded for the benchmarks it ran), and what the first `import torch` of a fresh machine
adds (torch's files out of the page cache). Each is the median of --repeat runs, wall clock, so
note the machine's load beside them.

    python tools/measure_session_constants.py --out constants.json
    python -m benchmarks.session_cost --grid tiny --constants constants.json --asv-results R --stages-tsv S
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wall(cmd: list[str], env: dict | None = None, cwd: Path = REPO) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return seconds


def median(cmd: list[str], repeat: int, env: dict | None = None) -> float:
    return statistics.median(wall(cmd, env) for _ in range(repeat))


def evict(packages: list[str], python: str) -> None:
    """Drop the page cache's copy of these packages' files (posix_fadvise DONTNEED: no root needed),
    as on a machine that has not read them since it started."""
    code = ("import importlib.util, os, sys\n"
            "for pkg in sys.argv[1:]:\n"
            "    root = os.path.dirname(importlib.util.find_spec(pkg).origin)\n"
            "    for d, _, files in os.walk(root):\n"
            "        for f in files:\n"
            "            try:\n"
            "                fd = os.open(os.path.join(d, f), os.O_RDONLY)\n"
            "            except OSError:\n"
            "                continue\n"
            "            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
            "            os.close(fd)\n")
    subprocess.run([python, "-c", code, *packages], check=True)


def first_import_extra(python: str, repeat: int) -> float:
    """The first `import torch` of a fresh machine (its files read from disk) less a warm one."""
    cold = []
    for _ in range(repeat):
        evict(["torch", "triton", "numpy"], python)
        cold.append(wall([python, "-c", "import torch"]))
    return max(0.0, statistics.median(cold) - median([python, "-c", "import torch"], repeat))


def asv_run_overhead(python: str, home: Path) -> float:
    """One asv run of bench_device.CopyCeiling on the tiny grid: its wall time less what asv
    recorded for the benchmarks themselves (their processes' durations)."""
    from benchmarks import session_cost
    from benchmarks.run import read_config

    results = home / "results"
    conf, reason = read_config(REPO / "asv.conf.json")
    if reason is not None:
        raise SystemExit(f"asv.conf.json: {reason}")
    conf = {**conf, "repo": str(REPO), "results_dir": str(results), "html_dir": str(home / "html"),
            "benchmark_dir": str(REPO / "benchmarks"), "plugins": ["tools.asv_plugins.runner_site"]}
    (home / "asv.conf.json").write_text(json.dumps(conf))
    env = {**os.environ, "HOME": str(home), "FUSED_MLP_GRID": "tiny", "PYTHONPATH": str(REPO)}
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    wall([python, "-m", "asv", "machine", "--yes", "--machine", "constants"], env)
    seconds = wall([python, "-m", "asv", "--config", str(home / "asv.conf.json"), "run", "-E", f"existing:{python}",
                    "--set-commit-hash", head, "--machine", "constants", "-b", r"bench_device\.CopyCeiling"], env)
    return seconds - sum(session_cost.asv_durations(results, "constants").values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    py = sys.executable
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="session-constants-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "HOME": str(home)}
        python_s = median([py, "-c", "pass"], args.repeat)
        constants = {
            "python_s": python_s,
            "import_torch_s": median([py, "-c", "import torch"], args.repeat) - python_s,
            "check_python_s": median([py, "-c", "import asv, torch, triton"], args.repeat) - python_s,
            "register_s": median([py, "-m", "benchmarks.harness.environment", "--machine", "constants"],
                                 args.repeat, env) - python_s,
            "run_module_s": median([py, "-c", "import benchmarks.run"], args.repeat) - python_s,
            "profile_module_s": max(0.0, median([py, "-c", "import benchmarks.profile"], args.repeat)
                                    - median([py, "-c", "import torch"], args.repeat)),  # noise can make it negative
            "snapshot_s": median([py, "-m", "benchmarks.harness.runner_state"], args.repeat) - python_s,
            "git_s": median(["git", "-C", str(REPO), "rev-parse", "HEAD"], args.repeat),
            "machine_identity_s": max(0.0, median([py, "-c", "import torch, benchmarks.harness.environment as e; "
                                                    "e.machine_identity()"], args.repeat)
                                  - median([py, "-c", "import torch"], args.repeat)),  # noise can make it negative
            "asv_run_s": asv_run_overhead(py, home),
            "first_import_extra_s": first_import_extra(py, args.repeat),
        }
    load = os.getloadavg()
    args.out.write_text(json.dumps({k: round(v, 3) for k, v in constants.items()}, indent=1) + "\n")
    print(json.dumps(constants, indent=1))
    print(f"load average while measuring (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
