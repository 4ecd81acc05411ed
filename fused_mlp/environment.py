"""The identity of the machine and software a measurement came from."""

import subprocess


def machine_identity() -> dict[str, str]:
    """GPU name, driver, CUDA, torch and triton versions ('none' where there is no GPU)."""
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
