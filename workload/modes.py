"""The modes a Case is measured in (torch-free): forward (inference, the suite's original
numbers), backward (the backward pass alone) and full (forward + backward); see training.py."""

FORWARD, BACKWARD, FULL = "forward", "backward", "full"
MODES = (FORWARD, BACKWARD, FULL)
TRAINING_MODES = (BACKWARD, FULL)
# What one measured call costs, in forwards: a GEMM's backward is two GEMMs of the forward's
# size (the input's and the weight's gradients), and the backward mode runs its forward too,
# outside the timed region. The CPU size limit (common.py) scales a Case's flops by it.
FORWARDS_PER_CALL = {FORWARD: 1, BACKWARD: 3, FULL: 3}


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not known; expected one of {list(MODES)}")
