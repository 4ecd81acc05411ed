"""OpSpec: what an op is, torch-free, in one class per op (workload/ops/<op>.py).

Its flops and minimum bytes, its inputs as shapes, its grid cases, labels and the names of its
peers: what the dashboard, the cost model and the grids read. The suite's code for the op (the
float64 reference, the eager code, the peers' calls) subclasses it in benchmarks/harness/ops/<op>.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from workload.fp8_dtypes import FP8_OPS, is_fp8

if TYPE_CHECKING:
    from workload.case import Case


@dataclass(frozen=True)
class RandomTensor:
    """An input tensor of the Case's dtype, N(0, 1) / sqrt(fan_in): nn.Linear's init scale, so
    activations stay O(1) through every layer and fp16 never overflows."""

    shape: tuple[int, ...]
    fan_in: int = 1


class OpSpec:
    """One op. Subclasses set the class attributes and implement the methods marked so."""

    name: str = ""  # the op's name in Case keys, and of fused_mlp's public function
    summary: str = ""  # what it computes, one line
    short_name: str = ""  # what command lines also accept (python -m benchmarks.profile --op gated)
    order: int = 0  # position in lists and legends
    benchmark_class: str | None = None  # the asv class timing this op's grid cases; None: not timed alone
    has_bias: bool = False  # Cases may ask for a bias
    layered: bool = False  # described by widths (in, hidden..., out), not by K and N
    peer_names: tuple[str, ...] = ()  # its peers beside fused, eager and compile (the harness has their code)

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
