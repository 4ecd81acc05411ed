"""Case: the one description of a workload (torch-free).

Grids, benchmarks, tests and the dashboard all speak in Cases. A Case has a stable text key
(`case.key`, `Case.from_key`), so asv parameters and dashboard rows map back to Cases without
anyone re-parsing shapes by hand. What a Case's op is (its inputs, cost and implementations) is
described once, in `workload.ops`: a Case is plain data and imports no op; the op
registry looks a Case's spec up (`ops.spec_of(case)`, which also checks the Case against its
op: a bias only where the op has one, widths exactly for layered ops).
"""

from __future__ import annotations

from dataclasses import dataclass, field


DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
DTYPES = tuple(DTYPE_BYTES)  # the float dtypes, which every op runs in
# + the FP8 dtypes (fp8, fp8_tensor, w8a16; harness/fp8.py) of the ops that have an FP8 form:
# the bytes of x's elements
FP8_X_BYTES = {"fp8": 1, "fp8_tensor": 1, "w8a16": 2}  # x's bytes per element (fp8_dtypes.py says what each is)
CASE_DTYPE_BYTES = {**DTYPE_BYTES, **FP8_X_BYTES}
# The activations fused_mlp fuses into its epilogues (its ACTIVATIONS table, by name).
ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


def _hidden_width(widths: tuple[int, ...]) -> int:
    return max(widths[1:-1]) if len(widths) > 2 else widths[-1]


@dataclass(frozen=True)
class Case:
    """One workload.

    op: a name in `ops.OPS`. M: rows (tokens). K: input features. N: output features, or the
    hidden size of a gated op, or the widest hidden layer of a layered op. widths: layered ops
    only (`ops.OpSpec.layered`), every layer's width (in, hidden..., out). bias: only for ops
    that have one (`ops.OpSpec.has_bias`). Those two rules are the op's: `ops.spec_of` checks them.
    """

    op: str
    M: int
    K: int
    N: int
    dtype: str
    activation: str
    bias: bool = False
    widths: tuple[int, ...] = field(default=())

    def __post_init__(self):
        if not isinstance(self.op, str) or not self.op:
            raise ValueError(f"Case op={self.op!r}; expected an op's name")
        if self.dtype not in CASE_DTYPE_BYTES:
            raise ValueError(f"Case dtype={self.dtype!r}; expected one of {list(CASE_DTYPE_BYTES)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"Case activation={self.activation!r}; expected one of {list(ACTIVATIONS)}")
        for name in ("M", "K", "N"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Case {name}={value!r}; expected a non-negative int")
        if self.widths and (len(self.widths) < 2 or (self.widths[0], _hidden_width(self.widths)) != (self.K, self.N)):
            raise ValueError(f"widths={self.widths} do not match K={self.K}, N={self.N}; build the Case with "
                             "Case.from_widths")

    @classmethod
    def from_widths(cls, op: str, M: int, widths, dtype: str, activation: str = "relu",
                    bias: bool = True) -> "Case":
        """A Case of a layered op (e.g. narrow_mlp) from its layer widths (in, hidden..., out)."""
        widths = tuple(int(w) for w in widths)
        if len(widths) < 2:
            raise ValueError(f"widths={widths}: need at least (in_features, out_features)")
        return cls(op, M, widths[0], _hidden_width(widths), dtype, activation, bias, widths)

    @property
    def itemsize(self) -> int:
        return CASE_DTYPE_BYTES[self.dtype]

    @property
    def layer_pairs(self) -> list[tuple[int, int]]:
        """(in, out) of every layer of a layered op."""
        return list(zip(self.widths[:-1], self.widths[1:]))

    @property
    def key(self) -> str:
        """Stable text form, e.g. 'linear_act M=16 K=4096 N=14336 bf16 gelu_tanh bias'."""
        shape = f"widths={'x'.join(map(str, self.widths))}" if self.widths else f"K={self.K} N={self.N}"
        return f"{self.op} M={self.M} {shape} {self.dtype} {self.activation}{' bias' if self.bias else ''}"

    @classmethod
    def from_key(cls, key: str) -> "Case":
        try:
            op, m, *rest = key.split()
            bias = rest[-1] == "bias"
            rest = rest[:-1] if bias else rest
            M = int(m.removeprefix("M="))
            if rest and rest[0].startswith("widths="):
                widths_part, dtype, activation = rest
                return cls.from_widths(op, M, widths_part.removeprefix("widths=").split("x"), dtype, activation, bias)
            k, n, dtype, activation = rest
            return cls(op, M, int(k.removeprefix("K=")), int(n.removeprefix("N=")), dtype, activation, bias)
        except (ValueError, IndexError, AttributeError) as e:
            raise ValueError(f"not a Case key: {key!r} ({e})") from None


# Real model shapes the grids draw from. (K, N) of transformer FFNs: GPT-2/BERT-base 768 -> 3072,
# Llama-3-8B/Mistral-7B 4096 -> 14336, and their down projections.
MODEL_PROJECTIONS = [(768, 3072), (3072, 768), (4096, 14336), (14336, 4096)]
TOKENS = [1, 16, 128, 2048, 8192]  # decode ... prefill
