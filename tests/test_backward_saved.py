"""What each op saves for its backward, per token, against eager PyTorch: measured from the
tensors autograd actually saves (saved_tensors_hooks), and docs/library.md's table checked against it.

Per-token bytes are the growth of the saved bytes with the token count (two counts), so the
weights, packed buffers and other fixed-size tensors drop out; a tensor saved twice (one storage)
counts once, as it occupies memory once.
"""

import re
from pathlib import Path

import pytest
import torch

import fused_mlp
from fused_mlp.activations import ACTIVATIONS

ROOT = Path(__file__).resolve().parents[1]
K, N, D = 24, 40, 16  # in features, hidden / out features, the gated MLP's output features
WIDTHS = (16, 32, 32, 8)  # the narrow MLP (padded width 32)
LLAMA = dict(K=4096, N=14336, D=4096)  # docs/library.md's example: a Llama-3-8B MLP in bf16


def saved_bytes(run) -> int:
    storages = {}

    def pack(t):
        s = t.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(storages.values())


def per_token(make_run, dtype=torch.float16) -> float:
    m1, m2 = 64, 96
    return (saved_bytes(make_run(m2, dtype)) - saved_bytes(make_run(m1, dtype))) / (m2 - m1)


def _params(*shapes, dtype):
    gen = torch.Generator().manual_seed(0)
    return [(torch.randn(s, generator=gen) / 8).to(dtype).requires_grad_() for s in shapes]


def linear_act(impl, activation, recompute=False):
    def make(M, dtype):
        x, w, b = _params((M, K), (N, K), (N,), dtype=dtype)
        if impl == "fused":
            return lambda: fused_mlp.linear_act(x, w, b, activation, recompute=recompute)
        return lambda: ACTIVATIONS[activation].torch_fn(torch.nn.functional.linear(x, w, b))
    return make


def gated(op, impl, activation="silu", recompute=False):
    def make(M, dtype):
        x, wg, wu, wd = _params((M, K), (N, K), (N, K), (D, N), dtype=dtype)
        if impl == "fused":
            if op == "gated_up":
                return lambda: fused_mlp.gated_up(x, wg, wu, activation, recompute=recompute)
            return lambda: fused_mlp.gated_mlp(x, wg, wu, wd, activation, recompute=recompute)
        act = ACTIVATIONS[activation].torch_fn
        h = lambda: act(x @ wg.T) * (x @ wu.T)  # noqa: E731
        return h if op == "gated_up" else (lambda: h() @ wd.T)
    return make


def two_layer_mlp(impl, recompute=False):
    def make(M, dtype):
        torch.manual_seed(0)
        seq = torch.nn.Sequential(torch.nn.Linear(K, N), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(N, D)).to(dtype)
        module = fused_mlp.FusedMLP.from_module(seq) if impl == "fused" else seq
        if impl == "fused":
            module.recompute = recompute
        x = torch.randn(M, K).to(dtype).requires_grad_()
        return lambda: module(x)
    return make


def narrow(impl, activation):
    def make(M, dtype):
        weights = _params(*((o, i) for i, o in zip(WIDTHS[:-1], WIDTHS[1:])), dtype=dtype)
        x = torch.randn(M, WIDTHS[0]).to(dtype).requires_grad_()
        if impl == "fused":
            return lambda: fused_mlp.narrow_mlp(x, weights, None, activation)

        def eager():
            h = x
            for i, w in enumerate(weights):
                h = torch.nn.functional.linear(h, w)
                if i < len(weights) - 1:
                    h = ACTIVATIONS[activation].torch_fn(h)
            return h
        return eager
    return make


# (op, option, measured run maker, elements per token as docs/library.md states them)
HIDDEN, PADDED = sum(WIDTHS[1:-1]), 32 * (len(WIDTHS) - 2)
CASES = [
    ("linear_act", "fused", linear_act("fused", "gelu"), "K + N", K + N),
    ("linear_act", "fused, recompute=True", linear_act("fused", "gelu", True), "K", K),
    ("linear_act", "eager", linear_act("eager", "gelu"), "K + N", K + N),
    ("gated_up", "fused", gated("gated_up", "fused"), "K + 2N", K + 2 * N),
    ("gated_up", "fused, recompute=True", gated("gated_up", "fused", recompute=True), "K", K),
    ("gated_up", "eager", gated("gated_up", "eager"), "K + 3N", K + 3 * N),
    ("gated_mlp", "fused", gated("gated_mlp", "fused"), "K + 2N", K + 2 * N),
    ("gated_mlp", "fused, recompute=True", gated("gated_mlp", "fused", recompute=True), "K", K),
    ("gated_mlp", "eager", gated("gated_mlp", "eager"), "K + 4N", K + 4 * N),
    ("FusedMLP", "fused", two_layer_mlp("fused"), "K + 2N", K + 2 * N),
    ("FusedMLP", "fused, recompute=True", two_layer_mlp("fused", True), "K + N", K + N),
    ("FusedMLP", "eager", two_layer_mlp("eager"), "K + 2N", K + 2 * N),
]
NARROW_CASES = [
    ("narrow_mlp", "fused (any activation)", narrow("fused", "gelu"), "in + W x hidden layers", WIDTHS[0] + PADDED),
    ("narrow_mlp", "eager relu", narrow("eager", "relu"), "in + sum of hidden widths", WIDTHS[0] + HIDDEN),
    ("narrow_mlp", "eager gelu / silu", narrow("eager", "gelu"), "in + 2 x sum of hidden widths",
     WIDTHS[0] + 2 * HIDDEN),
]


@pytest.mark.parametrize("op,option,make,formula,elements", CASES + NARROW_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES + NARROW_CASES])
def test_saved_bytes_per_token_are_what_the_docs_say(op, option, make, formula, elements):
    assert per_token(make) == elements * 2  # float16


def _docs_rows():
    text = (ROOT / "docs" / "library.md").read_text()
    section = text[text.index("Saved for the backward, per token"):]
    rows = {}
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("op", "---"):
            continue
        rows[(cells[0].strip("`"), cells[1])] = (cells[2], cells[3])
    return rows


def test_the_docs_table_lists_every_case_with_its_formula_and_llama_bytes():
    rows = _docs_rows()
    for op, option, _, formula, _ in CASES:
        assert (op, option) in rows, (op, option, sorted(rows))
        stated_formula, stated_bytes = rows[(op, option)]
        assert stated_formula == formula
        value = eval(formula.replace("2N", "2*N").replace("3N", "3*N").replace("4N", "4*N"), {}, LLAMA)
        assert int(stated_bytes.replace(",", "")) == 2 * value, (op, option, stated_bytes)
    for op, option, _, formula, _ in NARROW_CASES:
        assert rows[(op, option)][0] == formula
