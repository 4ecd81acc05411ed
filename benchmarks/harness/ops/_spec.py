"""OpSpec: everything the harness knows about one op, in one class per op (ops/<op>.py).

The torch-free half (cost, inputs as shapes, grid cases, labels) is what the dashboard reads;
the torch half (reference, eager code, peers) imports torch inside the methods, so importing an
op module never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.harness.fp8_dtypes import FP8_OPS, is_fp8

if TYPE_CHECKING:
    from benchmarks.harness.workloads import Case


@dataclass(frozen=True)
class RandomTensor:
    """An input tensor of the Case's dtype, N(0, 1) / sqrt(fan_in): nn.Linear's init scale, so
    activations stay O(1) through every layer and fp16 never overflows."""

    shape: tuple[int, ...]
    fan_in: int = 1


@dataclass(frozen=True)
class Peer:
    """Another way to compute the op, beside fused, eager and compile (e.g. a vendor epilogue,
    Liger-Kernel's fused MLP)."""

    call: Callable  # the op's signature
    unavailable: Callable[["Case", str], "str | None"]  # (case, device type) -> why it cannot run, or None
    # () -> why its backward cannot run (no autograd formula, ...), or None when it trains; asked
    # only for the training modes, so a probe here costs nothing to a forward-only run
    no_backward: Callable[[], "str | None"] = lambda: None


class OpSpec:
    """One op. Subclasses set the class attributes and implement the methods marked so."""

    name: str = ""  # the op's name in Case keys, and of fused_mlp's public function
    summary: str = ""  # what it computes, one line
    short_name: str = ""  # what command lines also accept (python -m benchmarks.profile --op gated)
    order: int = 0  # position in lists and legends
    benchmark_class: str | None = None  # the asv class timing this op's grid cases; None: not timed alone
    has_bias: bool = False  # Cases may ask for a bias
    layered: bool = False  # described by widths (in, hidden..., out), not by K and N
    peers: dict[str, Peer] = {}

    # ------------------------------------------------------------------ torch-free

    def flops(self, case: Case) -> int:
        """Floating-point operations of the matmuls (2 per multiply-add). Subclasses implement."""
        raise NotImplementedError

    def min_elements(self, case: Case) -> int:
        """Elements a perfectly fused implementation must read and write (every input and
        weight read once, the output written once). Subclasses implement."""
        raise NotImplementedError

    def inputs(self, case: Case) -> dict:
        """The op's keyword arguments, tensors as RandomTensor (lists of them allowed).
        Subclasses implement."""
        raise NotImplementedError

    def cases(self, grid: str) -> list[Case]:
        """This op's Cases in a named grid (grids.GRIDS); none by default."""
        return []

    def training_cases(self, grid: str) -> list[Case]:
        """This op's Cases in a named grid's training modes (bench_training); none by default."""
        return []

    def check_case(self, case: Case) -> None:
        """A ValueError naming the problem, unless `case` is a Case this op takes."""
        if case.op != self.name:
            raise ValueError(f"a {case.op} Case is not a {self.name} Case")
        if self.layered and not case.widths:
            raise ValueError(f"a {self.name} Case needs widths (in, ..., out); build it with Case.from_widths")
        if case.widths and not self.layered:
            raise ValueError(f"widths apply to layered ops only, not {self.name}")
        if case.bias and not self.has_bias:
            raise ValueError(f"{self.name} has no bias")
        if is_fp8(case.dtype) and self.name not in FP8_OPS:
            raise ValueError(f"{self.name} has no FP8 form: dtype {case.dtype!r} is for {list(FP8_OPS)}")

    def output_features(self, case: Case) -> int:
        return case.N

    def shape_label(self, case: Case) -> str:
        """The shape part of a Case (no op, dtype or activation): a heatmap row label."""
        if not self.layered:
            return f"M={case.M} K={case.K} N={case.N}"
        if len(set(case.widths)) == 1:  # the usual uniform MLP: say it short
            return f"M={case.M} width={case.N} layers={len(case.widths) - 1}"
        return f"M={case.M} widths={'x'.join(map(str, case.widths))}"

    # ------------------------------------------------------------------ torch side

    def reference(self, **inputs):
        """The exact result in float64 (rounding to the input dtype only where the op's
        contract stores an intermediate in it). Subclasses implement."""
        raise NotImplementedError

    def eager(self, **inputs):
        """The op as people write it in plain PyTorch. Subclasses implement."""
        raise NotImplementedError

    def fused(self, library, inputs: dict) -> Callable[[], object]:
        """A zero-argument call of the library's fused op on fixed inputs (for timing).

        `library` is the fused_mlp module of the commit under test. What a deployment does once
        at load time may be done here once, not in every call (ops override this for that)."""
        fn = self.fused_function(library)
        return lambda: fn(**inputs)

    def fused_function(self, library) -> Callable:
        fn = getattr(library, self.name, None)
        if not callable(fn):
            raise NotImplementedError(f"fused_mlp at this commit has no public {self.name}()")
        return fn
