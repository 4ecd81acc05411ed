"""Every bad input gets a clear error that names the argument and what was expected."""

import pytest
import torch

import fused_mlp
from benchmarks.harness.ops import spec_of
from workload.case import Case
from fused_mlp import FusedNarrowMLP


@pytest.fixture
def ok(device):
    return dict(x=torch.randn(4, 8, device=device), w=torch.randn(16, 8, device=device),
                w2=torch.randn(16, 8, device=device), wd=torch.randn(8, 16, device=device))


@pytest.mark.parametrize("call,error,message", [
    (lambda t: fused_mlp.linear_act(t["x"], t["w"], activation="tanh"), ValueError, "activation='tanh' is not supported"),
    (lambda t: fused_mlp.linear_act(t["x"], t["w"].t()), ValueError, r"weight has shape \(8, 16\); expected \(out_features, 8\)"),
    (lambda t: fused_mlp.linear_act(t["x"], t["w"][0]), ValueError, "weight must be 2-D"),
    (lambda t: fused_mlp.linear_act(t["x"].half(), t["w"]), TypeError, "weight has dtype torch.float32 but x has torch.float16"),
    (lambda t: fused_mlp.linear_act(t["x"].double(), t["w"]), TypeError, "x has dtype torch.float64"),
    (lambda t: fused_mlp.linear_act(t["x"].long(), t["w"]), TypeError, "x has dtype torch.int64"),
    (lambda t: fused_mlp.linear_act(t["x"].numpy(), t["w"]), TypeError, "x must be a torch.Tensor"),
    (lambda t: fused_mlp.linear_act(t["x"], t["w"], torch.zeros(15)), ValueError, r"bias has shape \(15,\); expected \(16,\)"),
    (lambda t: fused_mlp.linear_act(t["x"], t["w"], torch.zeros(16).half()), TypeError, "bias has dtype"),
    (lambda t: fused_mlp.gated_up(t["x"], t["w"], t["w2"][:8]), ValueError, r"w_up has shape \(8, 8\); expected \(16, 8\)"),
    (lambda t: fused_mlp.gated_up(t["x"], t["w"], t["w2"], "swish"), ValueError, "activation='swish'"),
    (lambda t: fused_mlp.gated_mlp(t["x"], t["w"], t["w2"], t["wd"].t()), ValueError, r"w_down has shape \(16, 8\); expected \(dim_out, 16\)"),
    (lambda t: fused_mlp.gated_mlp(t["x"], t["w"], t["w2"], t["wd"].half()), TypeError, "w_down has dtype"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(256, 8)]), ValueError, r"weights\[0\] has shape \(256, 8\); narrow_mlp supports layer widths <= 128"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(16, 8), torch.randn(4, 15)]), ValueError, r"weights\[1\] .* in_features must equal weights\[0\].shape\[0\] = 16"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], torch.randn(16, 8)), TypeError, "weights must be a non-empty list"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], []), TypeError, "weights must be a non-empty list"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(16, 9)]), ValueError, "in_features = 9"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(16, 8)], [torch.zeros(3)]), ValueError, r"biases\[0\] has shape \(3,\)"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(16, 8)], [None, None]), TypeError, "one entry .* per layer"),
    (lambda t: fused_mlp.narrow_mlp(t["x"], [torch.randn(16, 8)], output_activation="softmax"), ValueError, "output_activation='softmax'"),
])
def test_bad_input_is_named(ok, call, error, message):
    with pytest.raises(error, match=message):
        call(ok)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.setattr(fused_mlp._validate, "INTERPRETER", False)
    with pytest.raises(ValueError, match="x is on the CPU.*TRITON_INTERPRET=1"):
        fused_mlp.linear_act(torch.randn(2, 4), torch.randn(3, 4))


def test_meta_device_is_refused():
    with pytest.raises(ValueError, match="x is on meta"):
        fused_mlp.linear_act(torch.randn(2, 4, device="meta"), torch.randn(3, 4, device="meta"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device type")
def test_mixed_devices_are_refused():
    with pytest.raises(ValueError, match="weight is on cpu but x is on cuda"):
        fused_mlp.linear_act(torch.randn(2, 4, device="cuda"), torch.randn(3, 4))


def test_mixed_devices_message():
    meta = torch.randn(3, 4, device="meta")
    with pytest.raises(ValueError, match="weight is on meta but x is on cpu"):
        fused_mlp.linear_act(torch.randn(2, 4), meta)


def test_inputs_that_need_grad_build_a_graph_only_in_grad_mode():
    w = torch.randn(3, 4, requires_grad=True)
    assert fused_mlp.linear_act(torch.randn(2, 4), w).requires_grad
    with torch.no_grad():
        assert not fused_mlp.linear_act(torch.randn(2, 4), w).requires_grad


def test_module_constructor_errors():
    with pytest.raises(ValueError, match="activation='mish'"):
        fused_mlp.FusedLinear(4, 4, activation="mish")
    with pytest.raises(ValueError, match="need at least"):
        FusedNarrowMLP((4,))


@pytest.mark.parametrize("kwargs,message", [
    (dict(op="conv", M=1, K=2, N=3, dtype="fp16", activation="relu"), "op='conv'"),
    (dict(op="linear_act", M=1, K=2, N=3, dtype="int8", activation="relu"), "dtype='int8'"),
    (dict(op="linear_act", M=-1, K=2, N=3, dtype="fp16", activation="relu"), "M=-1"),
    (dict(op="linear_act", M=1, K=2, N=3, dtype="fp16", activation="elu"), "activation='elu'"),
    (dict(op="gated_mlp", M=1, K=2, N=3, dtype="fp16", activation="silu", bias=True), "gated_mlp has no bias"),
    (dict(op="narrow_mlp", M=1, K=2, N=3, dtype="fp16", activation="relu"), "Case.from_widths"),
])
def test_bad_cases(kwargs, message):
    with pytest.raises(ValueError, match=message):
        spec_of(Case(**kwargs))  # a Case is plain data; its op's rules are checked by the op registry


def test_bad_case_key():
    with pytest.raises(ValueError, match="not a Case key"):
        Case.from_key("linear_act M=two K=3 N=4 fp16 relu")
