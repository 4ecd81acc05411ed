"""Register this machine with asv, with the identity that keeps runners apart.

    python tools/asv_machine.py --machine h200-runner

asv's own `asv machine` asks only for OS/CPU/RAM. This adds the GPU name, driver, CUDA, torch and
triton versions; asv copies extra keys into results/<machine>/machine.json and into every result
file's params, so results from different GPUs or software stacks never mix.
"""

import argparse
import subprocess
import sys


def gpu_identity() -> dict[str, str]:
    import torch
    import triton

    info = {"torch": torch.__version__, "triton": triton.__version__,
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="name for this runner (asv --machine)")
    args = parser.parse_args(argv)
    from asv.machine import Machine, MachineCollection

    info = {**Machine.get_defaults(), **gpu_identity(), "machine": args.machine}
    MachineCollection.save(args.machine, info)
    print(f"asv machine {args.machine!r}: " + ", ".join(f"{k}={v}" for k, v in sorted(info.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
