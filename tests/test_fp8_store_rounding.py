"""The FP8 kernels' bf16 stores round to nearest even, as the bf16 kernels' do (to_storage): the
same launch with an fp32 output, rounded by torch, gives the bf16 output bit for bit. The
interpreter's own bf16 cast truncates, which would double every FP8 test's rounding error."""

import pytest
import torch

import fused_mlp
from fused_mlp.ops._gemm_launch import force_config
from tests.conftest import DEVICE
from tests.test_fp8 import make_w, make_x

# TMA-qualified sizes (K a multiple of 16, N of 8) so that the persistent variant can run too;
# M and N cross the interpreter's 32-wide blocks.
M, K, N = 65, 64, 72


@pytest.fixture(autouse=True)
def _tensors_on_the_test_device():
    with torch.device(DEVICE):
        yield


def _linear(form):
    x, xs, _ = make_x(M, K, form, "row", seed=11)
    w, ws, _ = make_w(N, K, "row", seed=12)
    bias = torch.randn(N, dtype=torch.bfloat16)
    return lambda out_dtype: fused_mlp.linear_act_fp8(x, w, ws, bias, "gelu_tanh", x_scale=xs, out_dtype=out_dtype)


def _gated(form):
    x, xs, _ = make_x(M, K, form, "row", seed=13)
    (wg, gs, _), (wu, us, _) = make_w(N, K, "row", seed=14), make_w(N, K, "row", seed=15)
    return lambda out_dtype: fused_mlp.gated_up_fp8(x, wg, wu, gs, us, "silu", x_scale=xs, out_dtype=out_dtype)


@pytest.mark.parametrize("op,form,variant", [(_linear, "w8a8", "tile"), (_linear, "w8a8", "persistent"),
                                             (_linear, "w8a16", "tile"), (_gated, "w8a8", "tile"),
                                             (_gated, "w8a16", "tile")],
                         ids=["linear-w8a8", "linear-w8a8-persistent", "linear-w8a16", "gated-w8a8", "gated-w8a16"])
def test_bf16_store_rounds_the_fp32_result_to_nearest_even(op, form, variant, poisoned_empty):
    run = op(form)
    # one config for both launches (a persistent one falls back to tiles where TMA is missing)
    with force_config(variant) as ran:
        wide, narrow = run(torch.float32), run(torch.bfloat16)
    assert ran[0] == ran[1]
    expected = wide.to(torch.bfloat16)  # torch rounds to nearest even
    assert torch.isfinite(wide).all()
    differ = (narrow.view(torch.int16) != expected.view(torch.int16)).sum().item()
    assert differ == 0, f"{differ} of {expected.numel()} bf16 outputs are not the fp32 result rounded to nearest even"
