"""The identity of the machine and software a measurement came from, and asv's record of it.

    python -m benchmarks.harness.environment --machine h200-runner   # register this machine with asv

asv's own `asv machine` asks only for OS/CPU/RAM. Registering adds the GPU name, driver, CUDA,
torch, triton and peer (liger-kernel) versions; asv copies extra keys into results/<machine>/machine.json and into
every result file's params, so results from different GPUs or software stacks never mix.
"""

import argparse
import subprocess
import sys
from pathlib import Path

from asv_results.file_lock import exclusive


def machine_identity() -> dict[str, str]:
    """GPU name, driver, CUDA, torch, triton and liger-kernel versions ('none' where absent)."""
    import torch
    import triton

    from benchmarks.harness.liger import version as liger_version  # the peers' versions: results of two never mix

    info = {"torch": torch.__version__, "triton": triton.__version__, "liger": liger_version(),
            "gpu": "none", "cuda": "none", "driver": "none"}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda or "unknown"
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True)
            info["driver"] = out.stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            info["driver"] = "unknown"
    return info


def _locked(path: Path):
    """Hold an exclusive flock on `path` + ".lock" while the block runs: asv saves a machine by
    reading the whole file, adding one entry and writing it back, so two shards registering on
    one host at once could each drop the other's entry. A lock file that is a FIFO or a symlink
    (or none to take) means registering unlocked, said on stderr, never a hang."""
    return exclusive(path.parent, path.name + ".lock",
                     lambda why: print(f"registering the asv machine unlocked: {why}", file=sys.stderr))


def register_asv_machine(machine: str) -> dict[str, str]:
    """Save `machine` in asv's machine file (~/.asv-machine.json) with this machine's identity,
    under a lock beside it (~/.asv-machine.json.lock)."""
    from asv.machine import Machine, MachineCollection

    info = {**Machine.get_defaults(), **machine_identity(), "machine": machine}
    with _locked(Path(MachineCollection.get_machine_file_path())):
        MachineCollection.save(machine, info)
    return info


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.harness.environment", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="name for this runner (asv --machine)")
    args = parser.parse_args(argv)
    info = register_asv_machine(args.machine)
    print(f"asv machine {args.machine!r}: " + ", ".join(f"{k}={v}" for k, v in sorted(info.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
