"""The named grids of Cases the asv suite runs, per workload family.

tiny     CPU smoke run (CI, laptops): one small case per family; eager and compile only.
quick    a smoke run on a GPU: the anchor cases, minutes at most.
default  the grid the history is kept on (README: `asv run`): real model shapes at decode and
         prefill sizes, every dtype and activation covered without taking the full product.
full     the full products, for investigations.
"""

from itertools import product

from .activations import ACTIVATIONS
from .cases import Case

FAMILIES = ("linear_act", "gated_mlp", "narrow_mlp")

# (K, N) of real transformer FFNs: GPT-2/BERT-base 768 -> 3072, Llama-3-8B/Mistral-7B
# 4096 -> 14336, and their down projections.
MODEL_PROJECTIONS = [(768, 3072), (3072, 768), (4096, 14336), (14336, 4096)]
TOKENS = [1, 16, 128, 2048, 8192]  # decode ... prefill


def _linear(M, KN, dtype, activation):
    return Case("linear_act", M, KN[0], KN[1], dtype, activation, bias=True)


def _narrow(rows, width, layers, dtype):
    return Case.narrow(rows, (width,) * (layers + 1), dtype, "relu")


def _tiny():
    return {
        "linear_act": [Case("linear_act", 64, 128, 256, "fp32", "gelu_tanh", bias=True)],
        "gated_mlp": [Case("gated_mlp", 64, 128, 256, "fp32", "silu")],
        "narrow_mlp": [_narrow(1024, 32, 4, "fp32")],
    }


def _quick():
    return {
        "linear_act": [_linear(M, (4096, 14336), "bf16", "gelu_tanh") for M in (16, 8192)],
        "gated_mlp": [Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh")],
        "narrow_mlp": [_narrow(2**21, 64, 5, "fp16")],
    }


def _default():
    linear = [_linear(M, KN, "bf16", "gelu_tanh") for M, KN in product(TOKENS, MODEL_PROJECTIONS)]
    linear += [_linear(M, KN, dtype, "gelu_tanh")
               for dtype, M, KN in product(("fp16", "fp32"), (16, 2048), [(768, 3072), (4096, 14336)])]
    linear += [_linear(M, (4096, 14336), "bf16", act)
               for act, M in product([a for a in ACTIVATIONS if a != "gelu_tanh"], (16, 2048))]
    gated = [
        Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh"),  # the seed article's GeGLU
        Case("gated_mlp", 8192, 4096, 14336, "bf16", "silu"),  # Llama-style SwiGLU, prefill
        Case("gated_mlp", 16, 4096, 14336, "bf16", "silu"),  # ... and decode
    ]
    narrow = [
        _narrow(2**21, 64, 5, "fp16"),
        _narrow(2**21, 128, 5, "fp16"),
        _narrow(2**18, 32, 4, "fp16"),
        _narrow(2**20, 64, 8, "bf16"),
        _narrow(2**20, 128, 4, "bf16"),
    ]
    return {"linear_act": linear, "gated_mlp": gated, "narrow_mlp": narrow}


def _full():
    linear = [_linear(M, KN, dtype, act) for M, KN, dtype, act
              in product(TOKENS, MODEL_PROJECTIONS, ("bf16", "fp16", "fp32"), ACTIVATIONS)]
    gated = [Case("gated_mlp", M, K, N, dtype, act) for M, (K, N, act), dtype
             in product(TOKENS, [(768, 3072, "gelu_tanh"), (4096, 14336, "silu")], ("bf16", "fp16"))]
    narrow = [_narrow(rows, width, layers, dtype) for rows, width, layers, dtype
              in product((2**18, 2**20, 2**21), (32, 64, 128), (4, 5, 8), ("fp16", "bf16"))]
    return {"linear_act": linear, "gated_mlp": gated, "narrow_mlp": narrow}


GRIDS = {"tiny": _tiny, "quick": _quick, "default": _default, "full": _full}


def grid(name: str) -> dict[str, list[Case]]:
    """The Cases of grid `name`, per family."""
    if name not in GRIDS:
        raise ValueError(f"grid {name!r} is not known; expected one of {list(GRIDS)}")
    return GRIDS[name]()
