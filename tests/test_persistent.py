"""The persistent TMA variant of the GEMM kernels (linear_act, gated_up), forced past the
autotuner: under the interpreter the autotuner is offered only the tile variant, so these tests
force the persistent config and check, per launch, which variant actually ran."""

import pytest
import torch

import fused_mlp
from benchmarks.harness.ops import OPS
from benchmarks.harness.references import assert_close
from benchmarks.harness.tensors import make_inputs
from workload.case import DTYPES, Case
from fused_mlp.ops._gemm_launch import force_config, tma_ok
from fused_mlp.ops._tuning import INTERPRETER_CONFIGS, _gemm_config, _persistent
from tests.test_ops import run_case

if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("the persistent variant needs TMA (sm_90 or newer)", allow_module_level=True)

ACTS = list(fused_mlp.ACTIVATIONS)
DTYPE_NAMES = list(DTYPES)
# TMA needs 16-byte rows, so K and N are multiples of 8 here (of 4 would do for fp32), but of no
# block size (16, 32), and M crosses block boundaries: the descriptors' zero fill and clipped
# stores are what is tested.
LINEAR_SHAPES = [(1, 40, 56), (7, 64, 24), (129, 104, 136)]
GATED_SHAPES = [(1, 40, 56), (7, 24, 72), (129, 56, 40)]


def run_forced(case: Case, device, config="persistent", expect=("persistent",), seed=0):
    with force_config(config) as ran:
        out = run_case(case, device, seed)
    assert ran == list(expect)
    return out


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", LINEAR_SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_act_persistent(M, K, N, activation, dtype, bias, device, poisoned_empty):
    run_forced(Case("linear_act", M, K, N, dtype, activation, bias), device, seed=M * K + N)


@pytest.mark.parametrize("op", ["gated_up", "gated_mlp"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("M,K,N", GATED_SHAPES)
def test_gated_persistent(op, M, K, N, activation, dtype, device, poisoned_empty):
    # gated_mlp: the up projection, then the down projection (a linear_act), both persistent
    expect = ("persistent",) * (2 if op == "gated_mlp" else 1)
    run_forced(Case(op, M, K, N, dtype, activation), device, expect=expect, seed=M + K * N)


@pytest.mark.parametrize("op", ["linear_act", "gated_up"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_whole_tile_epilogue(op, dtype, device, poisoned_empty):
    """EPILOGUE_SUBTILE = 1 (the interpreter config splits the epilogue in two)."""
    config = _gemm_config(32, 32, 32, 1, 4, **_persistent(1))
    run_forced(Case(op, 45, 40, 72, dtype, "gelu_tanh"), device, config=config)


@pytest.mark.parametrize("op", ["linear_act", "gated_up"])
def test_decode_shapes(op, device, poisoned_empty):
    """A decode-sized launch (M = 3) with a decode config: 16-row tiles, many tiles per program."""
    config = _gemm_config(16, 16, 64, 4, 4, **_persistent(1))
    run_forced(Case(op, 3, 136, 200, "fp16", "silu"), device, config=config)


@pytest.mark.parametrize("op", ["linear_act", "gated_up", "gated_mlp"])
@pytest.mark.parametrize("M,K,N", [(1, 37, 53), (7, 64, 17), (129, 97, 131)])
def test_shapes_that_do_not_qualify_fall_back_to_tiles(op, M, K, N, device, poisoned_empty):
    """Rows of 37 or 97 bf16 (74, 194 bytes) or an output of 17, 53 or 131 columns: no TMA."""
    launches = 2 if op == "gated_mlp" else 1
    run_forced(Case(op, M, K, N, "bf16", "relu"), device, expect=("tile",) * launches, seed=M)


def test_misaligned_and_strided_tensors_fall_back_to_tiles(device, poisoned_empty):
    """A qualifying shape, but x starts 2 bytes into its storage, or W is stored transposed."""
    case = Case("linear_act", 33, 40, 48, "fp16", "gelu")
    inputs = make_inputs(case, device)
    shifted = torch.empty(33 * 40 + 1, dtype=torch.float16, device=device)[1:].view(33, 40)
    shifted.copy_(inputs["x"])
    transposed = inputs["weight"].t().contiguous().t()
    for x, weight in ((shifted, inputs["weight"]), (inputs["x"], transposed)):
        assert not tma_ok(x, weight)
        with force_config("persistent") as ran:
            out = fused_mlp.linear_act(x, weight, inputs["bias"], "gelu")
        assert ran == ["tile"]
        assert_close(out, OPS["linear_act"].reference(x, weight, inputs["bias"], "gelu"), torch.float16)


def test_padded_row_strides_qualify(device, poisoned_empty):
    """K = 37 but x and W are column slices of 40-wide buffers: 80-byte rows, so TMA applies,
    and the descriptor's extent (37) keeps the padding columns out of the sum."""
    x = torch.randn(9, 40, device=device, dtype=torch.float16)
    w = torch.randn(24, 40, device=device, dtype=torch.float16)
    x[:, 37:] = float("nan")  # would poison the result if read
    w[:, 37:] = float("nan")
    with force_config("persistent") as ran:
        out = fused_mlp.linear_act(x[:, :37], w[:, :37], None, "none")
    assert ran == ["persistent"]
    assert_close(out, OPS["linear_act"].reference(x[:, :37], w[:, :37], None, "none"), torch.float16)


def test_zero_input_features_fall_back(device, poisoned_empty):
    """K = 0: a descriptor cannot have an empty dimension; the tile kernel returns act(bias)."""
    inputs = make_inputs(Case("linear_act", 5, 0, 8, "fp32", "silu", bias=True), device)
    with force_config("persistent") as ran:
        out = fused_mlp.linear_act(**inputs)
    assert ran == ["tile"]
    assert_close(out, OPS["linear_act"].reference(**inputs), torch.float32)


def test_tma_ok(device):
    t = torch.empty(4, 8, dtype=torch.float16, device=device)
    assert tma_ok(t)
    assert not tma_ok(torch.empty(4, 7, dtype=torch.float16, device=device))  # 14-byte rows
    assert tma_ok(torch.empty(4, 4, dtype=torch.float32, device=device))
    assert not tma_ok(t[:, 1:5])  # base 2 bytes past alignment
    assert not tma_ok(t.t())  # inner stride 4
    assert not tma_ok(torch.empty(0, 8, dtype=torch.float16, device=device))
    assert tma_ok(torch.empty(4, 8, dtype=torch.float16, device="meta"))  # the compile check's tensors


def test_every_gemm_config_can_use_the_autotune_disk_cache(monkeypatch):
    """The library asks for Triton's disk cache (the interpreter switches it off, so the request is
    checked), and no config has a pre_hook, with which Triton skips the cache: each asv process
    would re-tune."""
    import triton

    from fused_mlp import _triton_compat
    from fused_mlp.ops._tuning import gemm_candidates, persistent_candidates

    asked = {}
    monkeypatch.setattr(triton, "autotune", lambda **kwargs: asked.update(kwargs))
    _triton_compat.autotune(configs=[], key=["M"])
    assert asked["cache_results"] is True
    for config in gemm_candidates(1) + persistent_candidates(1) + list(INTERPRETER_CONFIGS.values()):
        assert config.pre_hook is None


def test_forcing_is_scoped():
    with force_config("persistent"):
        pass
    from fused_mlp.ops import _gemm_launch

    assert _gemm_launch._forced.get() is None
    assert INTERPRETER_CONFIGS["persistent"].kwargs["PERSISTENT"]
