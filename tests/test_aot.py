"""The compile check (fused_mlp.aot): real compiles for sm_90 / sm_80 on this CPU-only machine.

The tests compile in a subprocess without TRITON_INTERPRET (conftest sets it for this process,
and an interpreted kernel cannot be compiled for a GPU).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fused_mlp._arch import ARCHS

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, timeout=900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


COMPILE_ONE = '''
import json, sys, triton
from fused_mlp.aot.build import compile_config
from fused_mlp.ops import KERNELS
from fused_mlp.ops._tuning import gemm_shared_bytes, not_offered_because
from fused_mlp._arch import ARCHS

spec = next(s for s in KERNELS if s.name == "linear_act")
known = next(c for c in spec.candidates if (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"],
             c.num_warps, c.num_stages) == (128, 256, 64, 8, 3))
# planted: 256x256x128 in 4 stages needs ~512 KB of shared memory
oversize = triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=4)
out = {}
for name, config in (("known", known), ("oversize", oversize)):
    out[name] = compile_config(spec, config, "sm_90", "bf16", "gelu_tanh").to_dict()
out["oversize_offered_because"] = not_offered_because(oversize, ARCHS["sm_90"], "bf16", {}, gemm_shared_bytes(1), ())
print("RESULT", json.dumps(out))
'''


def result_of(code: str) -> dict:
    """What `code` printed as "RESULT <json>", run without TRITON_INTERPRET (run_python)."""
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.fixture(scope="module")
def compiled():
    return result_of(COMPILE_ONE)


def test_the_known_hopper_tile_uses_wgmma_and_big_shared_memory(compiled):
    """128x256x64, 8 warps, 3 stages, bf16 on sm_90: a warpgroup GEMM with 3 x 48 KB of tiles."""
    r = compiled["known"]
    assert r["ok"], r["problem"]
    assert r["tensor_core_ops"]["wgmma"] > 0 and r["tensor_core_ops"]["mma"] == 0
    assert r["shared_bytes"] > 100 * 1024
    assert r["shared_bytes"] >= 3 * (128 * 64 + 64 * 256) * 2  # the estimate the pruning uses
    assert 64 <= r["registers"] <= 255 and r["spill_bytes"] == 0
    assert r["sass_instructions"] > 100 and r["compile_seconds"] > 0


def test_a_planted_oversize_config_is_reported_not_ok_and_not_offered(compiled):
    r = compiled["oversize"]
    assert not r["ok"]
    assert "shared memory" in r["problem"] or "does not compile" in r["problem"], r["problem"]
    assert "shared memory" in compiled["oversize_offered_because"]


SPILLING = '''
import sys, triton
from fused_mlp.aot.__main__ import main
from fused_mlp.ops import KERNELS

spec = next(s for s in KERNELS if s.name == "linear_act")
spec.candidates[:] = [  # planted: fits shared memory, but its erf-GELU epilogue does not fit 255 registers
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8, num_stages=3)]
sys.exit(main(["--kernel", "linear_act", "--dtype", "bf16", "--activation", "gelu", "--jobs", "1"]))
'''


def test_the_command_fails_when_an_offered_config_breaks_a_rule():
    done = run_python(SPILLING)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "NOT OK" in done.stdout and "spills" in done.stdout
    assert "1 offered config(s) not ok" in done.stdout


def test_the_command_refuses_to_run_under_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "fused_mlp.aot"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and "TRITON_INTERPRET is set" in done.stderr


@pytest.mark.parametrize("filters, selects", [
    (("--subset", "ci", "--dtype", "fp32"), "subset ci"),
    (("--subset", "ci", "--kernel", "narrow_mlp"), "subset ci"),
    (("--subset", "ci", "--kernel", "narrow_mlp", "--list"), "subset ci"),
    (("--arch", "gfx942", "--kernel", "linear_act", "--variant", "persistent"), "the plan"),
])
def test_filters_that_select_nothing_exit_2_rather_than_pass(filters, selects):
    """A check of nothing would print '0 compiles' and pass: the filters are refused instead."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "fused_mlp.aot", *filters], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{selects} selects nothing with these filters" in done.stderr and "compiles" not in done.stdout


def test_arch_limits():
    assert ARCHS["sm_90"].shared_bytes_per_block == 227 * 1024
    assert ARCHS["sm_80"].shared_bytes_per_block == 163 * 1024


def test_every_kernel_has_an_offered_config_for_every_arch_and_dtype_it_runs_in():
    """Pruning must never leave the autotuner with nothing (the launch would fail)."""
    from fused_mlp.aot import plan
    from fused_mlp.ops import KERNELS

    offered = {(KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant, t.arch, t.dtype)
               for t in plan(("sm_90", "sm_80")) if t.offered}
    runs_in = {(spec.name, spec.variant, arch, dtype) for spec in KERNELS
               for arch in spec.archs if arch in ("sm_90", "sm_80")  # the others: tests/test_arch.py
               for dtype in spec.dtypes}
    assert runs_in, "no kernel runs on sm_90 or sm_80: nothing was checked"
    assert sorted(runs_in - offered) == []


def test_the_default_plan_compiles_every_epilogue_of_every_kernel_variant():
    """Every activation is compiled for each variant (an epilogue that does not compile is
    found), except where a variant of the same kernel covers its epilogue code (the narrow MLP's
    widths), which gets the costliest epilogue only."""
    from fused_mlp.activations import ACTIVATIONS
    from fused_mlp.aot import plan
    from fused_mlp.ops import KERNELS

    tasks = plan(("sm_90", "sm_80"))
    by_variant = {(spec.name, spec.variant): spec for spec in KERNELS}
    assert KERNELS and {t.kernel_index for t in tasks} == set(range(len(KERNELS)))  # every kernel planned
    for k, spec in enumerate(KERNELS):
        activations = {t.activation for t in tasks if t.kernel_index == k}
        if spec.epilogue_covered_by is None:
            assert activations == set(spec.activations or ACTIVATIONS), (spec.name, spec.variant)
        else:
            assert len(activations) == 1, (spec.name, spec.variant)
            assert by_variant[(spec.name, spec.epilogue_covered_by)].kernel is spec.kernel


def test_the_runtime_pruner_keeps_what_the_compile_check_calls_offered(monkeypatch):
    """The autotuner's early_config_prune hook, on an A100 (sm_80, 163 KB) in IEEE fp32: the same
    configs as the compile check's plan; the rest were left out for shared memory or spills."""
    import types

    import torch

    from fused_mlp._arch import ARCHS
    from fused_mlp.ops import _tuning, gated_up

    spec = gated_up.KERNELS[0]
    reasons = [_tuning.not_offered_because(c, ARCHS["sm_80"], "fp32", {}, spec.shared_estimate, spec.excluded)
               for c in spec.candidates]
    expected = [c for c, reason in zip(spec.candidates, reasons) if reason is None]
    assert expected and any("spills" in (r or "") for r in reasons) and any("shared memory" in (r or "") for r in reasons)

    monkeypatch.setattr(_tuning, "INTERPRETER", False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: types.SimpleNamespace(shared_memory_per_block_optin=163 * 1024))
    prune = _tuning.device_pruner(spec.shared_estimate, "x_ptr", spec.excluded)
    x = torch.empty(4, 4, dtype=torch.float32)
    assert prune(spec.candidates, {"x_ptr": x}, INPUT_PRECISION="ieee") == expected
    tf32 = prune(spec.candidates, {"x_ptr": x}, INPUT_PRECISION="tf32")
    assert tf32 != expected  # TF32 has its own exclusions


def test_persistent_configs_are_offered_only_where_tma_is(monkeypatch):
    """The persistent (TMA) variant: in the sm_90 plan, never in the sm_80 one; at run time only
    on a device with TMA and only for a launch whose tensors qualify (TMA_OK)."""
    import types

    import torch

    from fused_mlp.aot import plan
    from fused_mlp.ops import KERNELS, _tuning, linear_act

    variants = {arch: {KERNELS[t.kernel_index].variant for t in plan((arch,)) if t.offered} for arch in ("sm_90", "sm_80")}
    assert "persistent" in variants["sm_90"] and "persistent" not in variants["sm_80"]

    spec = next(s for s in linear_act.KERNELS if s.variant == "persistent")
    configs = linear_act.KERNELS[0].candidates + spec.candidates
    monkeypatch.setattr(_tuning, "INTERPRETER", False)
    props = types.SimpleNamespace(shared_memory_per_block_optin=227 * 1024)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    prune = _tuning.device_pruner(spec.shared_estimate, "x_ptr", spec.excluded)
    x = torch.empty(4, 4, dtype=torch.bfloat16)
    for capability, tma_ok, expect_persistent in (((9, 0), True, True), ((9, 0), False, False), ((8, 0), True, False)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        kept = prune(configs, {"x_ptr": x}, INPUT_PRECISION="ieee", TMA_OK=tma_ok)
        assert any(_tuning.is_persistent(c) for c in kept) == expect_persistent, (capability, tma_ok)
        assert any(not _tuning.is_persistent(c) for c in kept)


def test_the_lean_plan_lets_bf16_stand_for_fp16_only_where_their_configs_agree():
    from fused_mlp.aot import plan
    from fused_mlp.ops import KERNELS

    def series(tasks):
        return {(KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant, t.arch, t.dtype, t.config_index,
                 t.activation) for t in tasks}

    full, lean = series(plan(("sm_90", "sm_80"))), series(plan(("sm_90", "sm_80"), lean=True))
    assert lean < full
    assert {s for s in full if s[3] != "fp16"} == {s for s in lean if s[3] != "fp16"}  # only fp16 is left out
    for name, variant, arch, _, config, activation in (s for s in full - lean):
        assert (name, variant, arch, "bf16", config, activation) in lean
    # fp16 alone (no bf16 to stand for it) is planned in full
    assert series(plan(("sm_90",), dtypes=("fp16",), lean=True)) == series(plan(("sm_90",), dtypes=("fp16",)))


@pytest.mark.parametrize("op", ["linear_act", "gated_up"])
def test_the_plan_compiles_every_config_a_training_forward_is_offered(op):
    """The training forward (STORE_PRE: Z, or G and U, stored for the backward) is its own
    autotune choice: every config its launch would be offered, on each arch and dtype, is in the
    plan, compiled with the pre-activation stores (its example stores them into their own tensors)."""
    import torch

    from fused_mlp.aot import plan
    from fused_mlp.ops import KERNELS
    from fused_mlp.ops._tuning import not_offered_because

    training = [(k, spec) for k, spec in enumerate(KERNELS) if spec.name == op and spec.training_forward]
    assert {spec.variant for _, spec in training} == {"tile-train", "persistent-train"}
    tasks = plan(("sm_90", "sm_80"))
    for k, spec in training:
        args, constexprs = spec.example(torch.bfloat16, "gelu")
        assert constexprs["STORE_PRE"] is True
        out_index = 3  # x, weight(s), out, then the pre-activation buffer(s)
        assert all(a is not args[out_index] for a in args[out_index + 1:out_index + 3] if isinstance(a, torch.Tensor))
        checked = [(arch, dtype) for arch in spec.archs if arch in ("sm_90", "sm_80") for dtype in spec.dtypes]
        assert checked, (op, spec.variant)  # measured: every passing config offered
        for arch, dtype in checked:
            offered = {c for c, config in enumerate(spec.candidates)
                       if not_offered_because(config, ARCHS[arch], dtype, constexprs, spec.shared_estimate,
                                              spec.excluded) is None}
            planned = {t.config_index for t in tasks if t.kernel_index == k and t.arch == arch
                       and t.dtype == dtype and t.offered}
            assert offered and planned == offered, (op, spec.variant, arch, dtype)
