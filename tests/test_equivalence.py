"""Fused == the unfused baselines on the same inputs; from_module round trips."""

import pytest
import torch
from torch import nn

from benchmarks.harness import implementations
from benchmarks.harness.references import assert_close
from benchmarks.harness.tensors import make_inputs, torch_dtype
from workload.case import ACTIVATIONS, DTYPES, Case
from fused_mlp import FusedGatedMLP, FusedLinear, FusedMLP, FusedNarrowMLP

from unfused_modules import LlamaStyleMLP, SeedGeGLU

CASES = {
    "linear_act": lambda dtype, act: Case("linear_act", 9, 45, 70, dtype, act, bias=True),
    "gated_up": lambda dtype, act: Case("gated_up", 9, 45, 70, dtype, act),
    "gated_mlp": lambda dtype, act: Case("gated_mlp", 9, 45, 70, dtype, act),
    "narrow_mlp": lambda dtype, act: Case.from_widths("narrow_mlp", 65, (10, 64, 64, 3), dtype, act),
}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("op", list(CASES))
def test_fused_matches_eager(op, activation, dtype, device, poisoned_empty):
    case = CASES[op](dtype, activation)
    inputs = make_inputs(case, device, seed=3)
    fused = implementations.get(op, "fused")(**inputs)
    eager = implementations.get(op, "eager")(**inputs)
    assert_close(fused, eager.double(), torch_dtype(case), f"fused vs eager, {case.key}")


@pytest.mark.parametrize("op", list(CASES))
def test_fused_matches_torch_compile(op, device):
    case = CASES[op]("fp32", "gelu_tanh")
    inputs = make_inputs(case, device, seed=4)
    fused = implementations.get(op, "fused")(**inputs)
    compiled = implementations.get(op, "compile")(**inputs)
    assert_close(fused, compiled.double(), torch.float32, f"fused vs compile, {case.key}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch._addmm_activation's cuBLASLt path is CUDA-only")
@pytest.mark.parametrize("activation", ["relu", "gelu_tanh"])
def test_fused_matches_cublaslt(activation, device):
    case = Case("linear_act", 64, 96, 160, "bf16", activation, bias=True)
    inputs = make_inputs(case, device)
    assert_close(implementations.get("linear_act", "fused")(**inputs),
                 implementations.get("linear_act", "cublaslt")(**inputs).double(), torch.bfloat16)


def test_every_implementation_is_listed_and_reasons_are_given():
    assert implementations.names("linear_act") == ["fused", "eager", "compile", "compile_max_autotune", "cublaslt",
                                                   "scaled_mm", "scaled_mm_compile"]
    assert implementations.names("gated_mlp") == ["fused", "eager", "compile", "compile_max_autotune", "liger_mlp",
                                                  "liger_glu", "scaled_mm", "scaled_mm_compile"]
    linear = lambda act: Case("linear_act", 4, 8, 16, "bf16", act)  # noqa: E731
    assert "CUDA" in implementations.unavailable_reason(linear("relu"), "cublaslt", "cpu")
    assert "silu" in implementations.unavailable_reason(linear("silu"), "cublaslt", "cuda")
    assert implementations.unavailable_reason(linear("gelu_tanh"), "cublaslt", "cuda") is None
    assert "FP8 dtypes only" in implementations.unavailable_reason(linear("relu"), "scaled_mm", "cuda")
    with pytest.raises(ValueError, match="implementation 'triton' of linear_act"):
        implementations.get("linear_act", "triton")
    with pytest.raises(ValueError, match="op='conv'"):
        implementations.names("conv")


def _same_output(unfused: nn.Module, fused: nn.Module, x, dtype):
    with torch.no_grad():
        assert_close(fused(x), unfused(x).double(), dtype, type(fused).__name__)


@pytest.mark.parametrize("act_module,name", [(nn.ReLU(), "relu"), (nn.GELU(), "gelu"),
                                             (nn.GELU(approximate="tanh"), "gelu_tanh"), (nn.SiLU(), "silu")])
def test_fused_linear_from_module(act_module, name, device):
    unfused = nn.Sequential(nn.Linear(24, 40), act_module).to(device)
    fused = FusedLinear.from_module(unfused)
    assert fused.activation == name
    _same_output(unfused, fused, torch.randn(3, 5, 24, device=device), torch.float32)
    plain = FusedLinear.from_module(unfused[0])
    assert plain.activation == "none"
    _same_output(unfused[0], plain, torch.randn(6, 24, device=device), torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_fused_mlp_from_module(dtype, device):
    unfused = nn.Sequential(nn.Linear(32, 96), nn.GELU(approximate="tanh"), nn.Linear(96, 32)).to(device, dtype)
    fused = FusedMLP.from_module(unfused)
    assert fused.fc1.weight.dtype == dtype
    _same_output(unfused, fused, torch.randn(17, 32, device=device, dtype=dtype), dtype)


def test_fused_gated_mlp_from_module(device):
    seed = SeedGeGLU(48, 80).to(device)
    with pytest.raises(ValueError, match="pass activation="):
        FusedGatedMLP.from_module(seed)
    _same_output(seed, FusedGatedMLP.from_module(seed, activation="gelu_tanh"), torch.randn(2, 7, 48, device=device),
                 torch.float32)
    llama = LlamaStyleMLP(48, 80).to(device)
    fused = FusedGatedMLP.from_module(llama)
    assert fused.activation == "silu"
    _same_output(llama, fused, torch.randn(13, 48, device=device), torch.float32)
    with pytest.raises(ValueError, match="disagrees"):
        FusedGatedMLP.from_module(llama, activation="gelu_tanh")
    # state_dicts are interchangeable with the Llama-style module
    fused.load_state_dict(llama.state_dict())


class _HFGeluTanh(nn.Module):
    """An activation module fused_mlp does not know (as transformers' PytorchGELUTanh)."""

    def forward(self, x):
        return nn.functional.gelu(x, approximate="tanh")


def test_fused_gated_mlp_from_module_with_an_unknown_act_fn(device):
    """activation= names what an unrecognised act_fn computes, as from_module's docstring says."""
    custom = LlamaStyleMLP(48, 80).to(device)
    custom.act_fn = _HFGeluTanh()
    with pytest.raises(ValueError, match="_HFGeluTanh is not one fused_mlp can fuse"):
        FusedGatedMLP.from_module(custom)
    fused = FusedGatedMLP.from_module(custom, activation="gelu_tanh")
    assert fused.activation == "gelu_tanh"
    _same_output(custom, fused, torch.randn(11, 48, device=device), torch.float32)


def test_fused_narrow_mlp_from_module(device):
    unfused = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                            nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4), nn.Identity())
    unfused = unfused.to(device, torch.float16)
    fused = FusedNarrowMLP.from_module(unfused)
    assert (fused.activation, fused.output_activation) == ("relu", "none")
    _same_output(unfused, fused, torch.randn(300, 3, device=device, dtype=torch.float16), torch.float16)


def test_fused_narrow_mlp_repacks_after_weight_update(device):
    fused = FusedNarrowMLP((4, 32, 2), activation="silu").to(device)
    x = torch.randn(20, 4, device=device)
    with torch.no_grad():
        before = fused(x)
        fused.layers[1].weight.mul_(2)  # in-place update: the packed copy must be refreshed
        after = fused(x)
        bias_free = after - fused.layers[1].bias
        assert_close(bias_free, (before - fused.layers[1].bias).double() * 2, torch.float32)


def test_from_module_rejects_what_it_cannot_fuse():
    with pytest.raises(ValueError, match="same activation"):
        FusedNarrowMLP.from_module(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 2)))
    with pytest.raises(ValueError, match="Tanh is not one fused_mlp can fuse"):
        FusedLinear.from_module(nn.Sequential(nn.Linear(4, 8), nn.Tanh()))
    with pytest.raises(ValueError, match="Linear, activation, Linear"):
        FusedMLP.from_module(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 4)))
    biased = SeedGeGLU(8, 16)
    biased.up_proj = nn.Linear(8, 16, bias=True)
    with pytest.raises(ValueError, match="has a bias"):
        FusedGatedMLP.from_module(biased, activation="silu")
    with pytest.raises(TypeError, match="no nn.Linear `gate_proj`"):
        FusedGatedMLP.from_module(nn.Linear(3, 3), activation="silu")


def test_fused_narrow_mlp_builds_a_graph_when_its_parameters_require_grad():
    """It trains (gradients in tests/test_backward_narrow.py); under no_grad nothing is recorded."""
    fused = FusedNarrowMLP((4, 16, 2)).half()
    assert fused(torch.randn(3, 4).half()).grad_fn is not None
    with torch.no_grad():
        assert fused(torch.randn(3, 4).half()).grad_fn is None


def test_fused_narrow_mlp_repacks_after_dtype_change(device):
    fused = FusedNarrowMLP((4, 32, 2), activation="relu").to(device)
    x = torch.randn(20, 4, device=device)
    with torch.no_grad():
        fused(x)
        fused.half()
        out = fused(x.half())
    unfused = nn.Sequential(fused.layers[0], nn.ReLU(), fused.layers[1])
    with torch.no_grad():
        assert_close(out, unfused(x.half()).double(), torch.float16)
