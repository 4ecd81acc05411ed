"""The modes a Case is measured in (torch-free): forward (inference, the suite's original
numbers), backward (the backward pass alone) and full (forward + backward); see training.py."""

FORWARD, BACKWARD, FULL = "forward", "backward", "full"
MODES = (FORWARD, BACKWARD, FULL)
TRAINING_MODES = (BACKWARD, FULL)


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not known; expected one of {list(MODES)}")
