"""The compile check on the four newer architectures (sm_100, sm_120, gfx942, gfx950): real
compiles on this CPU-only machine, read as the table reads them; the plan and the CI subset."""

import subprocess

import pytest

from fused_mlp._arch import NEW_ARCHS
from tests.test_aot import ROOT, result_of, run_python

COMPILE = '''
import json
from fused_mlp.aot import plan, subset, task_config
from fused_mlp.aot.build import compile_config
from fused_mlp.ops import KERNELS

out = {}
for t in subset(plan(("sm_100", "sm_120", "gfx942", "gfx950")), "ci"):
    spec = KERNELS[t.kernel_index]
    if (spec.name, spec.variant) in (("linear_act_fp8", "w8a8"), ("linear_act", "tile")):
        out[f"{spec.name}/{spec.variant} {t.arch}"] = compile_config(spec, task_config(t), t.arch, t.dtype,
                                                                     t.activation).to_dict()
print("RESULT", json.dumps(out))
'''


@pytest.fixture(scope="module")
def compiled():
    return result_of(COMPILE)


def test_each_new_architecture_compiles_with_its_own_tensor_core_instruction(compiled):
    expected = {"sm_100": "tcgen05", "sm_120": "mma", "gfx942": "mfma", "gfx950": "mfma"}
    for arch, op in expected.items():
        r = compiled[f"linear_act/tile {arch}"]
        assert r["ok"], (arch, r["problem"])
        assert r["registers"] > 0 and r["sass_instructions"] > 0 and r["shared_bytes"] > 0, arch
        assert r["tensor_core_ops"][op] > 0, (arch, r["tensor_core_ops"])
    assert compiled["linear_act/tile sm_120"]["tensor_core_ops"]["wgmma"] == 0  # no warpgroup MMA on sm_120


def test_w8a8_uses_an_fp8_mfma_on_both_amd_architectures(compiled):
    """gfx950 in OCP e4m3fn (f8f6f4); gfx942 in e4m3fnuz, the only FP8 its MFMA takes (fp8_fp8)."""
    assert "f8f6f4" in compiled["linear_act_fp8/w8a8 gfx950"]["matrix_instruction"]
    assert "_fp8_fp8" in compiled["linear_act_fp8/w8a8 gfx942"]["matrix_instruction"]
    assert "e4m3" in compiled["linear_act_fp8/w8a8 sm_120"]["matrix_instruction"]
    for arch in ("gfx950", "gfx942"):
        r = compiled[f"linear_act_fp8/w8a8 {arch}"]
        assert r["ok"] and r["agpr_count"] is not None and r["sgpr_count"] > 0, r


def test_the_amd_metadata_reader_refuses_text_without_the_fields():
    from fused_mlp.aot.amdgcn import read_amdgcn

    with pytest.raises(RuntimeError, match=r"no \.vgpr_count"):
        read_amdgcn("\tv_mov_b32 v0, 0\n")


def _cli(*args):
    env_code = "import sys; from fused_mlp.aot.__main__ import main; sys.exit(main(sys.argv[1:]))"
    return run_python(env_code.replace("sys.argv[1:]", repr(list(args))), timeout=300)


def test_the_plan_lists_what_amd_does_not_build_and_why_without_compiling():
    done = _cli("--arch", "gfx942", "--arch", "gfx950", "--list")
    assert done.returncode == 0, done.stderr[-2000:]
    unbuilt = [line for line in done.stdout.splitlines() if "not built" in line]
    tma = {"linear_act/persistent", "linear_act/persistent-train", "gated_up/persistent", "gated_up/persistent-train",
           "linear_act_fp8/w8a8-persistent"}
    for arch in ("gfx950", "gfx942"):
        lines = [line for line in unbuilt if line.split()[1] == arch]
        assert {line.split()[0] for line in lines} == tma, arch
        assert all("TMA" in line for line in lines), arch
    assert "nothing compiled" in done.stdout


def test_the_ci_subset_is_at_most_16_compiles_over_the_four_architectures():
    done = _cli(*(a for arch in NEW_ARCHS for a in ("--arch", arch)), "--subset", "ci", "--list")
    assert done.returncode == 0, done.stderr[-2000:]
    planned = [line for line in done.stdout.splitlines() if line.endswith("  offered")]
    assert 0 < len(planned) <= 16
    assert {line.split()[1] for line in planned} == set(NEW_ARCHS)


def test_ci_runs_the_subset():
    text = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")  # continued lines as one
    (command,) = [line.split() for line in text.splitlines() if "--subset ci" in line and not line.lstrip().startswith("#")]
    archs = {command[i + 1] for i, word in enumerate(command) if word == "--arch"}
    assert archs >= {"sm_100", "sm_120", "gfx942", "gfx950"} and "tools/compile_check.sh" in command, command
    assert subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")]).returncode == 0
