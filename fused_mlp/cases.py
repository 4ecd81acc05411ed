"""Case: the one description of a workload, shared by grids, benchmarks, tests and the dashboard.

A Case has a stable text key (`case.key`, `Case.from_key`) so that asv parameters and dashboard
rows map back to Cases without anyone re-parsing shapes by hand.
"""

from dataclasses import dataclass, field

import torch

from .activations import get_activation
from .implementations import OPS

DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _hidden_width(widths: tuple[int, ...]) -> int:
    return max(widths[1:-1]) if len(widths) > 2 else widths[-1]


@dataclass(frozen=True)
class Case:
    """One workload.

    op: linear_act | gated_up | gated_mlp | narrow_mlp. M: rows (tokens). K: input features.
    N: output features of linear_act; the hidden size of gated_up/gated_mlp (gated_mlp maps back
    to K); the hidden width of narrow_mlp. widths: narrow_mlp only, every layer's width
    (in, hidden..., out). bias: linear_act and narrow_mlp only.
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
        if self.op not in OPS:
            raise ValueError(f"Case op={self.op!r}; expected one of {list(OPS)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"Case dtype={self.dtype!r}; expected one of {list(DTYPES)}")
        get_activation(self.activation)
        for name in ("M", "K", "N"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"Case {name}={value!r}; expected a non-negative int")
        if self.op == "narrow_mlp":
            if len(self.widths) < 2 or (self.widths[0], _hidden_width(self.widths)) != (self.K, self.N):
                raise ValueError("a narrow_mlp Case needs widths (in, ..., out); build it with Case.narrow")
        elif self.widths:
            raise ValueError(f"widths apply to narrow_mlp only, not {self.op}")
        if self.bias and self.op in ("gated_up", "gated_mlp"):
            raise ValueError(f"{self.op} has no bias")

    @classmethod
    def narrow(cls, M: int, widths, dtype: str, activation: str = "relu", bias: bool = True) -> "Case":
        widths = tuple(int(w) for w in widths)
        if len(widths) < 2:
            raise ValueError(f"widths={widths}: need at least (in_features, out_features)")
        return cls("narrow_mlp", M, widths[0], _hidden_width(widths), dtype, activation, bias, widths)

    @property
    def N_out(self) -> int:
        """Features of the op's output."""
        if self.op == "narrow_mlp":
            return self.widths[-1]
        return self.K if self.op == "gated_mlp" else self.N

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def key(self) -> str:
        """Stable text form, e.g. 'linear_act M=16 K=4096 N=14336 bf16 gelu_tanh bias'."""
        shape = f"widths={'x'.join(map(str, self.widths))}" if self.op == "narrow_mlp" else f"K={self.K} N={self.N}"
        return f"{self.op} M={self.M} {shape} {self.dtype} {self.activation}{' bias' if self.bias else ''}"

    @classmethod
    def from_key(cls, key: str) -> "Case":
        try:
            op, m, *rest = key.split()
            bias = rest[-1] == "bias"
            rest = rest[:-1] if bias else rest
            M = int(m.removeprefix("M="))
            if op == "narrow_mlp":
                widths_part, dtype, activation = rest
                return cls.narrow(M, widths_part.removeprefix("widths=").split("x"), dtype, activation, bias)
            k, n, dtype, activation = rest
            return cls(op, M, int(k.removeprefix("K=")), int(n.removeprefix("N=")), dtype, activation, bias)
        except (ValueError, IndexError) as e:
            raise ValueError(f"not a Case key: {key!r} ({e})") from None

    def make_inputs(self, device="cpu", seed: int = 0) -> dict:
        """Fresh random inputs as keyword arguments of the op (and of every implementation of it).

        Weights are scaled by 1/sqrt(fan_in), as nn.Linear's init does, so activations stay O(1)
        through every layer and fp16 never overflows.
        """
        gen = torch.Generator(device=device).manual_seed(seed)

        def rand(*shape, fan_in=1):
            t = torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)
            return (t / fan_in**0.5).to(self.torch_dtype)

        x = rand(self.M, self.K)
        if self.op == "linear_act":
            return dict(x=x, weight=rand(self.N, self.K, fan_in=self.K),
                        bias=rand(self.N) if self.bias else None, activation=self.activation)
        if self.op in ("gated_up", "gated_mlp"):
            inputs = dict(x=x, w_gate=rand(self.N, self.K, fan_in=self.K), w_up=rand(self.N, self.K, fan_in=self.K))
            if self.op == "gated_mlp":
                inputs["w_down"] = rand(self.K, self.N, fan_in=self.N)
            return {**inputs, "activation": self.activation}
        pairs = list(zip(self.widths[:-1], self.widths[1:]))
        return dict(x=x, weights=[rand(o, i, fan_in=i) for i, o in pairs],
                    biases=[rand(o) for _, o in pairs] if self.bias else None,
                    activation=self.activation, output_activation=None)
