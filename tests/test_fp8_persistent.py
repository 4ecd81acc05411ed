"""The persistent TMA variant of linear_act_fp8 (W8A8), forced past the autotuner as
tests/test_persistent.py forces bf16's: under the interpreter the autotuner is offered only the
tile variant, so these tests force the persistent config and check, per launch, which variant
ran; the float64 reference is computed from the dequantized inputs (tests/test_fp8.py)."""

import pytest
import torch
import torch.nn.functional as F

import fused_mlp
from benchmarks.harness.references import assert_close
from fused_mlp.ops import _fp8_common, _tuning, fp8_linear
from fused_mlp.ops._gemm_launch import force_config
from fused_mlp.ops._tuning import _gemm_config, _persistent
from fused_mlp.quantize import E4M3_MAX, dequantize_fp8, quantize_fp8
from tests.conftest import DEVICE
from tests.test_fp8 import TORCH_ACT, make_w, make_x

if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("the persistent variant needs TMA (sm_90 or newer)", allow_module_level=True)

ACTS = list(fused_mlp.ACTIVATIONS)
# TMA needs 16-byte rows: K a multiple of 16 for e4m3 x and W, N of 8 for the bf16 output (of 4
# for fp32), but of no block size (32), and M crossing block boundaries: the descriptors' zero
# fill past K and the clipped stores past M and N are what is tested.
SHAPES = [(1, 48, 56), (7, 64, 24), (129, 112, 136)]


@pytest.fixture(autouse=True)
def _tensors_on_the_test_device():
    with torch.device(DEVICE):
        yield


def run_w8a8(M, K, N, activation, granularity="row", bias=True, out_dtype=None, config="persistent",
             expect="persistent", seed=0):
    x, xs, x64 = make_x(M, K, "w8a8", granularity, seed=seed)
    w, ws, w64 = make_w(N, K, granularity, seed=seed + 1)
    b = torch.randn(N, dtype=torch.bfloat16) if bias else None
    with force_config(config) as ran:
        out = fused_mlp.linear_act_fp8(x, w, ws, b, activation, x_scale=xs, out_dtype=out_dtype)
    assert ran == [expect]
    ref = TORCH_ACT[activation](x64 @ w64.T + (b.double() if bias else 0))
    assert_close(out, ref, out_dtype or torch.bfloat16, f"{activation} {granularity} bias={bias}")


@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", SHAPES)
@pytest.mark.parametrize("granularity", ["row", "tensor"])
def test_w8a8_persistent(M, K, N, activation, granularity, poisoned_empty):
    bias = (M + len(activation)) % 2 == 0  # half the cases with a bias
    run_w8a8(M, K, N, activation, granularity, bias, seed=M * K + N)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_output_dtypes_through_the_tma_store(out_dtype, poisoned_empty):
    run_w8a8(33, 64, 40, "gelu", out_dtype=out_dtype, seed=3)


def test_whole_tile_epilogue(poisoned_empty):
    """EPILOGUE_SUBTILE = 1 (the interpreter config splits the epilogue in two)."""
    run_w8a8(45, 48, 72, "gelu_tanh", config=_gemm_config(32, 32, 32, 1, 4, **_persistent(1)), seed=4)


def test_decode_shape(poisoned_empty):
    """A decode-sized launch (M = 3) with a decode config: 16-row tiles, many tiles per program."""
    run_w8a8(3, 144, 200, "silu", config=_gemm_config(16, 16, 64, 4, 4, **_persistent(1)), seed=5)


@pytest.mark.parametrize("M,K,N", [(7, 37, 24), (7, 48, 53), (1, 97, 131)])
def test_shapes_that_do_not_qualify_fall_back_to_tiles(M, K, N, poisoned_empty):
    """Rows of 37 or 97 e4m3 bytes, or an output of 53 or 131 bf16 columns: no TMA."""
    run_w8a8(M, K, N, "relu", expect="tile", seed=M + K)


def test_w8a16_keeps_to_the_tile_variant(poisoned_empty):
    """W8A16 has no persistent variant (its weights are up-cast from bytes in registers)."""
    x, _, x64 = make_x(9, 48, "w8a16", None, seed=6)
    w, ws, w64 = make_w(24, 48, "row", seed=7)
    with force_config("persistent") as ran:
        out = fused_mlp.linear_act_fp8(x, w, ws, None, "silu")
    assert ran == ["tile"]
    assert_close(out, F.silu(x64 @ w64.T), torch.bfloat16)


def test_gated_mlp_down_projection_runs_persistent(poisoned_empty):
    """W8A8 gated_mlp_fp8: the gated kernel (tile only), then the down projection, persistent."""
    x, xs, x64 = make_x(17, 48, "w8a8", "row", seed=8)
    (wg, gs, wg64), (wu, us, wu64), (wd, ds, wd64) = (make_w(n, k, "row", seed=9 + i)
                                                      for i, (n, k) in enumerate(((64, 48), (64, 48), (48, 64))))
    with force_config("persistent") as ran:
        out = fused_mlp.gated_mlp_fp8(x, wg, wu, wd, gs, us, ds, "silu", x_scale=xs)
    assert ran == ["tile", "persistent"]
    hidden = fused_mlp.gated_up_fp8(x, wg, wu, gs, us, "silu", x_scale=xs)
    h64 = dequantize_fp8(*quantize_fp8(hidden, "row"), torch.float64)  # as test_fp8.test_gated_mlp_fp8
    assert_close(out, h64 @ wd64.T, torch.bfloat16)


def test_padded_row_strides_qualify(poisoned_empty):
    """K = 37, but x and W are column slices of 48-wide e4m3 buffers: 48-byte rows, so TMA
    applies, and the descriptor's extent (37) keeps the padding (e4m3 NaN) out of the sum."""
    x, xs, x64 = make_x(9, 37, "w8a8", "row", seed=10)
    w, ws, w64 = make_w(24, 37, "row", seed=11)
    nan = torch.full((), float("nan")).to(torch.float8_e4m3fn)
    x_wide, w_wide = (torch.full((t.shape[0], 48), nan.item(), dtype=torch.float8_e4m3fn) for t in (x, w))
    x_wide[:, :37], w_wide[:, :37] = x, w
    with force_config("persistent") as ran:
        out = fused_mlp.linear_act_fp8(x_wide[:, :37], w_wide[:, :37], ws, None, "none", x_scale=xs)
    assert ran == ["persistent"]
    assert_close(out, x64 @ w64.T, torch.bfloat16)


def test_saturated_inputs(poisoned_empty):
    """e4m3's largest values (±448) through TMA and the promoted accumulation, exactly."""
    x = torch.full((16, 64), E4M3_MAX)
    x[::2] = -E4M3_MAX
    x = x.to(torch.float8_e4m3fn)
    w = torch.full((32, 64), E4M3_MAX).to(torch.float8_e4m3fn)
    one = torch.ones(1)
    with force_config("persistent") as ran:
        out = fused_mlp.linear_act_fp8(x, w, one, None, "none", x_scale=one, out_dtype=torch.float32)
    assert ran == ["persistent"]
    expected = 64 * E4M3_MAX**2 * torch.tensor([-1.0, 1.0]).repeat(8)[:, None].expand(16, 32)
    assert torch.equal(out.cpu(), expected)


def test_persistent_configs_are_offered_on_sm90_for_qualifying_w8a8_launches_only(monkeypatch):
    """The W8A8 autotuner's candidates include the persistent ones; the pruner offers the first
    W8A8_PERSISTENT_OFFERED of them (the rest are held back) only on a GPU with TMA and for a
    launch whose tensors qualify (TMA_OK); W8A16 has none."""
    import types

    configs = _fp8_common.candidates("w8a8") + _fp8_common.persistent_candidates()
    assert not any(_tuning.is_persistent(c) for c in _fp8_common.candidates("w8a16"))
    monkeypatch.setattr(_tuning, "INTERPRETER", False)
    props = types.SimpleNamespace(shared_memory_per_block_optin=227 * 1024)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    prune = _tuning.device_pruner(fp8_linear._SHARED, "x_ptr", fp8_linear._EXCLUDED)
    x = torch.empty(4, 16, dtype=torch.float8_e4m3fn, device="cpu")
    for capability, tma_ok, expect_persistent in (((9, 0), True, True), ((9, 0), False, False), ((8, 9), True, False)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        kept = prune(configs, {"x_ptr": x}, TMA_OK=tma_ok)
        persistent = [c for c in kept if _tuning.is_persistent(c)]
        offered = _fp8_common.persistent_candidates()[:_fp8_common.W8A8_PERSISTENT_OFFERED]
        assert persistent == (offered if expect_persistent else [])
        assert any(not _tuning.is_persistent(c) for c in kept)
        if capability == (9, 0) and tma_ok:  # the measurement times the held-back ones too
            timed = _measure_variants().configs_to_time(x, x, x)
            assert [c for c, _ in timed] == configs and [c for c, offered in timed if offered] == kept


def _measure_variants():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "measure_fp8_variants.py"
    spec = importlib.util.spec_from_file_location("measure_fp8_variants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_variant_measurement_checks_every_config_before_timing_it(tmp_path, monkeypatch):
    """tools/measure_fp8_variants.py (for the GPU session) on the CPU: both variants run, each
    held to the dequantized reference; a wrong result is reported and not timed (exit 1)."""
    import json

    tool = _measure_variants()
    assert tool.main(["--small", "--samples", "1", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert {(r["variant"], r["ran"]) for r in rows} == {("tile", "tile"), ("persistent", "persistent")}
    assert all(r["problem"] is None and r["median_s"] > 0 and r["rel_error"] < 1e-2 for r in rows)

    real = fused_mlp.linear_act_fp8
    monkeypatch.setattr(fused_mlp, "linear_act_fp8", lambda *a, **k: real(*a, **k) * 1.05)
    assert tool.main(["--small", "--samples", "1", "--json", str(tmp_path / "rows.json")]) == 1
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert all("relative error" in r["problem"] and r["median_s"] is None for r in rows)
