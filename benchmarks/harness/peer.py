"""Peer: another way to compute an op, beside fused, eager and compile (its own module: the
peers' modules, fp8_peers and liger, build these records and the op registry imports them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workload.case import Case


@dataclass(frozen=True)
class Peer:
    """Another way to compute the op, beside fused, eager and compile (e.g. a vendor epilogue,
    Liger-Kernel's fused MLP)."""

    call: Callable  # the op's signature
    unavailable: Callable[["Case", str], "str | None"]  # (case, device type) -> why it cannot run, or None
    # () -> why its backward cannot run (no autograd formula, ...), or None when it trains; asked
    # only for the training modes, so a probe here costs nothing to a forward-only run
    no_backward: Callable[[], "str | None"] = lambda: None
