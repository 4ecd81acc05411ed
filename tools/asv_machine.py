"""Register this machine with asv, with the identity that keeps runners apart.

    python tools/asv_machine.py --machine h200-runner

asv's own `asv machine` asks only for OS/CPU/RAM. This adds the GPU name, driver, CUDA, torch and
triton versions; asv copies extra keys into results/<machine>/machine.json and into every result
file's params, so results from different GPUs or software stacks never mix.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fused_mlp.environment import machine_identity  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="name for this runner (asv --machine)")
    args = parser.parse_args(argv)
    from asv.machine import Machine, MachineCollection

    info = {**Machine.get_defaults(), **machine_identity(), "machine": args.machine}
    MachineCollection.save(args.machine, info)
    print(f"asv machine {args.machine!r}: " + ", ".join(f"{k}={v}" for k, v in sorted(info.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
