"""The six architectures: which one a device follows, its FP8 format, and the config rules per
architecture (fused_mlp._arch, ops._tuning). Nothing compiles here (tests/test_aot_archs.py does)."""

import logging
import types

import pytest
import torch

from fused_mlp import _arch
from fused_mlp._arch import ARCHS, cuda_arch, fp8_dtype_name, rocm_arch
from fused_mlp.ops import KERNELS, _tuning, linear_act


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(_arch, "_warned", set())


@pytest.mark.parametrize("capability, expected, nearest", [
    (80, "sm_80", False), (86, "sm_80", True), (89, "sm_80", True), (90, "sm_90", False),
    (100, "sm_100", False), (103, "sm_100", True), (120, "sm_120", False), (121, "sm_120", True), (75, "sm_80", True),
])
def test_a_cuda_capability_maps_to_its_own_architecture_or_says_which_it_follows(capability, expected, nearest, caplog):
    with caplog.at_level(logging.WARNING, logger="fused_mlp"):
        assert cuda_arch(capability).name == expected
        assert cuda_arch(capability).name == expected  # a second device of the kind: said once only
    said = [r.getMessage() for r in caplog.records]
    if nearest:
        assert len(said) == 1 and f"sm_{capability} is not a checked architecture" in said[0] and expected in said[0]
    else:
        assert said == []


@pytest.mark.parametrize("name, expected, nearest", [
    ("gfx942:sramecc+:xnack-", "gfx942", False), ("gfx942", "gfx942", False), ("gfx950:sramecc+:xnack-", "gfx950", False),
    ("gfx90a:sramecc+:xnack-", "gfx942", True), ("gfx1201", "gfx950", True),
])
def test_a_rocm_device_maps_by_its_gfx_name(name, expected, nearest, caplog):
    with caplog.at_level(logging.WARNING, logger="fused_mlp"):
        assert rocm_arch(name).name == expected
    assert len(caplog.records) == (1 if nearest else 0)


def test_an_ada_gpu_follows_sm_80_and_keeps_its_fp8_tensor_cores(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    for capability, fp8 in (((8, 9), "e4m3fn"), ((8, 6), None), ((8, 0), None)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        arch = _arch.device_arch(torch.device("cuda", 0))
        assert (arch.name, arch.fp8_format) == ("sm_80", fp8), capability


def test_a_gfx_name_that_is_not_one_is_refused_by_name():
    with pytest.raises(ValueError, match="'sm_90' is not an AMD gfx architecture name"):
        rocm_arch("sm_90")


def test_a_rocm_build_maps_by_gcn_arch_name_not_the_capability_it_reports(monkeypatch):
    """MI300 reports capability 9.4, which would read as Hopper (TMA, wgmma); its gfx name wins."""
    monkeypatch.setattr(torch.version, "hip", "6.4.0")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 4))
    for gfx, expected in (("gfx942:sramecc+:xnack-", "gfx942"), ("gfx950:sramecc+:xnack-", "gfx950")):
        monkeypatch.setattr(torch.cuda, "get_device_properties",
                            lambda device=None, g=gfx: types.SimpleNamespace(gcnArchName=g))
        arch = _arch.device_arch(torch.device("cuda", 0))
        assert arch.name == expected and not arch.tma and arch.vendor == "amd"


def test_the_persistent_variant_is_never_launched_on_an_mi300(monkeypatch):
    from fused_mlp.ops import _gemm_launch

    monkeypatch.setattr(torch.version, "hip", "6.4.0")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 4))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: types.SimpleNamespace(gcnArchName="gfx942:sramecc+:xnack-"))
    _gemm_launch._cuda_has_tma.cache_clear()
    try:
        assert _gemm_launch._cuda_has_tma(0) is False
    finally:
        _gemm_launch._cuda_has_tma.cache_clear()


def test_the_fp8_format_follows_the_architecture():
    assert fp8_dtype_name(ARCHS["gfx942"]) == "float8_e4m3fnuz"
    for name in ("sm_90", "sm_100", "sm_120", "gfx950"):
        assert fp8_dtype_name(ARCHS[name]) == "float8_e4m3fn", name
    with pytest.raises(ValueError, match="sm_80 has no FP8"):
        fp8_dtype_name(ARCHS["sm_80"])


def test_the_compile_check_builds_w8a8_in_the_arch_format():
    from fused_mlp.aot.build import _example

    spec = next(s for s in KERNELS if s.name == "linear_act_fp8" and s.variant == "w8a8")
    fp8 = {name: {a.dtype for a in _example(spec, "fp8", "gelu", ARCHS[name])[0] if isinstance(a, torch.Tensor)}
           for name in ("gfx942", "gfx950", "sm_100")}
    assert torch.float8_e4m3fnuz in fp8["gfx942"] and torch.float8_e4m3fn not in fp8["gfx942"]
    assert torch.float8_e4m3fn in fp8["gfx950"] and torch.float8_e4m3fn in fp8["sm_100"]


def _tile(bm, bn, bk, stages, warps, **variant):
    return _tuning._gemm_config(bm, bn, bk, stages, warps, **variant)


def test_config_rules_per_architecture():
    shared = _tuning.gemm_shared_bytes(1)
    big = _tile(128, 256, 64, 3, 8)  # 144 KB in bf16
    persistent = _tile(128, 128, 64, 4, 8, **_tuning._persistent(1))
    reason = lambda config, arch, dtype="bf16": _tuning.not_offered_because(  # noqa: E731
        _tuning.for_arch(config, ARCHS[arch]), ARCHS[arch], dtype, {}, shared, ())
    assert reason(big, "sm_100") is None and reason(big, "sm_90") is None
    assert "sm_120 allows 99 KB" in reason(big, "sm_120")
    assert "gfx942 allows 64 KB" in reason(big, "gfx942") and "LDS" in reason(big, "gfx942")
    for arch in ("sm_90", "sm_100", "sm_120"):
        assert reason(persistent, arch, "bf16") is None or "shared memory" in reason(persistent, arch, "bf16")
    for arch in ("gfx942", "gfx950"):
        assert "no TMA" in reason(persistent, arch)
    assert "sm_80 does not have" in reason(persistent, "sm_80")
    small = _tile(64, 64, 32, 3, 4)
    assert "no TF32 dot" in reason(small, "gfx950", "tf32") and reason(small, "gfx942", "tf32") is None


def test_amd_configs_carry_the_amd_knobs_and_nvidia_ones_do_not():
    config = _tile(128, 128, 64, 3, 8)
    assert _tuning.for_arch(config, ARCHS["sm_100"]) is config
    amd = {name: _tuning.for_arch(config, ARCHS[name]) for name in ("gfx942", "gfx950")}
    assert _tuning.config_key(amd["gfx942"]) == (128, 128, 64, 8, 2, "wpe2", "nk16", "kp2")
    assert _tuning.config_key(amd["gfx950"]) == (128, 128, 64, 8, 2, "wpe2", "nk16", "kp1")


def test_an_unmeasured_architecture_is_offered_the_first_fitting_config_of_each_variant():
    from fused_mlp.aot import plan

    for arch in ("sm_100", "sm_120", "gfx942", "gfx950"):
        offered = {}
        for t in plan((arch,), activations=("gelu",)):
            if t.offered:
                offered.setdefault((t.kernel_index, t.dtype), []).append(t.config_index)
        assert offered and all(len(configs) == 1 for configs in offered.values()), arch
    measured = [t for t in plan(("sm_90",), activations=("gelu",)) if t.offered and KERNELS[t.kernel_index].name == "linear_act"
                and KERNELS[t.kernel_index].variant == "tile" and t.dtype == "bf16"]
    assert len(measured) > 1  # a measured arch keeps every config that passed


def test_every_kernel_variant_runs_somewhere_on_every_architecture_and_dtype():
    """Pruning never leaves a launch with nothing: per architecture and dtype, every kernel
    variant is offered a config, or (sm_120's 99 KB: the persistent variant in tf32, W8A8's) its
    tile variant is, which the same autotuner then keeps."""
    from fused_mlp.aot import plan

    offered = {(KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant, t.arch, t.dtype)
               for t in plan(tuple(ARCHS)) if t.offered}
    for spec in KERNELS:
        for arch in spec.archs:
            for dtype in spec.dtypes:
                if dtype == "tf32" and not ARCHS[arch].tf32:
                    continue
                tile = spec.variant.replace("-persistent", "").replace("persistent", "tile")  # w8a8-persistent: w8a8
                assert {(spec.name, spec.variant, arch, dtype), (spec.name, tile, arch, dtype)} & offered, \
                    (spec.name, spec.variant, arch, dtype)


def test_the_runtime_pruner_on_rocm_offers_amd_configs_and_no_tma(monkeypatch):
    monkeypatch.setattr(_tuning, "INTERPRETER", False)
    monkeypatch.setattr(torch.version, "hip", "6.4.0")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: types.SimpleNamespace(gcnArchName="gfx942:sramecc+:xnack-"))
    tile, persistent = linear_act.KERNELS[0], linear_act.KERNELS[1]
    prune = _tuning.device_pruner(tile.shared_estimate, "x_ptr", tile.excluded)
    kept = prune(tile.candidates + persistent.candidates, {"x_ptr": torch.empty(4, 4, dtype=torch.bfloat16)},
                 INPUT_PRECISION="ieee", TMA_OK=True)
    assert len(kept) == 1 and not _tuning.is_persistent(kept[0])
    assert kept[0].kwargs["matrix_instr_nonkdim"] == 16 and kept[0].num_stages == 2


def test_the_runtime_pruner_on_a_b200_follows_sm_100(monkeypatch):
    monkeypatch.setattr(_tuning, "INTERPRETER", False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (10, 0))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: types.SimpleNamespace(shared_memory_per_block_optin=227 * 1024))
    tile, persistent = linear_act.KERNELS[0], linear_act.KERNELS[1]
    prune = _tuning.device_pruner(tile.shared_estimate, "x_ptr", tile.excluded)
    kept = prune(tile.candidates + persistent.candidates, {"x_ptr": torch.empty(4, 4, dtype=torch.bfloat16)},
                 INPUT_PRECISION="ieee", TMA_OK=True)
    assert [_tuning.is_persistent(c) for c in kept] == [False, True]
