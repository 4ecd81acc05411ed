"""bench_compile.KernelResources: its params are the suite's fixed list (never the library's), a
config a commit does not offer is a skip with the reason, a library that does not import fails
every value, and HEAD's library offers nothing the list lacks."""

import importlib
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import bench_compile
from workload import kernel_configs

ROOT = Path(__file__).resolve().parents[1]


def test_import_reads_no_library_and_params_are_the_fixed_list():
    code = ("import sys, benchmarks.bench_compile as b, workload.kernel_configs as k; "
            "assert 'fused_mlp' not in sys.modules, 'fused_mlp imported'; "
            "assert b.KernelResources.params == [list(k.KERNEL_CONFIGS), list(k.DTYPES)]; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "FUSED_MLP_GRID": "default"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


def test_the_tiny_grid_lists_linear_act_in_bf16():
    configs, dtypes = kernel_configs.params("tiny")
    assert dtypes == ["bf16"] and configs and all(c.startswith("linear_act/") for c in configs)


def test_head_offers_no_config_the_list_lacks():
    """A new kernel config (backward, FP8, ...) needs its entry in workload/kernel_configs.py."""
    assert bench_compile.missing_configs() == []


def _fake_aot(offered, compiled_fields):
    calls = []

    def check(archs, dtypes, kernels, activations):
        calls.append(kernels)
        return [SimpleNamespace(kernel=k, variant=v, config_label=c, dtype=d,
                                to_dict=lambda f=fields: dict(f))
                for (k, v, c), d, fields in compiled_fields if k in kernels and d in dtypes]

    aot = SimpleNamespace(INTERPRETER=False, DTYPES=("bf16", "fp32"), COSTLIEST_ACTIVATION="gelu", ARCHS={"sm_90": None},
                          offered_series=lambda arch: offered, check=check)
    return aot, calls


def test_a_config_the_commit_does_not_offer_is_a_skip_and_values_keep_their_names(monkeypatch):
    """An older commit offers one linear_act tile config: its value lands under its own name; every
    other listed config is a skip that says why (the old params shifted values between names)."""
    tile = ("linear_act", "tile", "128x128x32 w8 s3")
    fields = {"registers": 164, "spill_bytes": 0, "shared_bytes": 49152, "sass_instructions": 900, "problem": None}
    aot, calls = _fake_aot([tile], [(tile, "bf16", fields)])
    monkeypatch.setattr(bench_compile, "compile_check", lambda: (aot, None))
    bench = bench_compile.KernelResources()
    cache = bench.setup_cache()
    assert calls == [("linear_act",)]  # kernels the commit does not have are not asked for
    assert bench.track_registers(cache, "linear_act/tile 128x128x32 w8 s3", "bf16") == 164
    with pytest.raises(NotImplementedError, match="is not offered for bf16 on sm_90 by the library at this commit"):
        bench.track_registers(cache, "linear_act/persistent 128x128x32 w8 s3 tma sub2", "bf16")
    with pytest.raises(NotImplementedError, match="not offered for tf32"):
        bench.track_registers(cache, "linear_act/tile 128x128x32 w8 s3", "tf32")


def test_a_config_that_does_not_compile_is_a_failure(monkeypatch):
    tile = ("linear_act", "tile", "128x128x32 w8 s3")
    broken = {"registers": None, "spill_bytes": None, "shared_bytes": None, "sass_instructions": None,
              "problem": "ptxas error"}
    aot, _ = _fake_aot([tile], [(tile, "bf16", broken)])
    monkeypatch.setattr(bench_compile, "compile_check", lambda: (aot, None))
    bench = bench_compile.KernelResources()
    with pytest.raises(RuntimeError, match="did not compile for sm_90: ptxas error"):
        bench.track_registers(bench.setup_cache(), "linear_act/tile 128x128x32 w8 s3", "bf16")


def test_a_library_that_does_not_import_fails_setup_cache(monkeypatch):
    """asv records every value of the class as failed when setup_cache raises (a result file with
    nulls), instead of no result file at all as the import-time params gave."""
    def broken():
        raise ImportError("cannot import name 'linear_act' from 'fused_mlp'")

    monkeypatch.setattr(bench_compile, "compile_check", broken)
    with pytest.raises(ImportError, match="cannot import name"):
        bench_compile.KernelResources().setup_cache()


def test_the_missing_cli_refuses_other_arguments():
    assert subprocess.run([sys.executable, "-m", "benchmarks.bench_compile", "--bogus"], cwd=ROOT,
                          capture_output=True, timeout=120).returncode == 2


def test_every_listed_config_the_library_offers_is_planned_in_the_suite_s_dtypes():
    """The W8A8 configs compile in fp8 only: with fp8 missing from the suite's dtypes, 15 listed
    configs were stored as skipped at every commit ("not offered for bf16 ... at this commit").
    Planned, not compiled: aot.plan with the arguments setup_cache gives aot.check."""
    from benchmarks.harness.library import compile_check

    aot, reason = compile_check()
    assert aot is not None, reason
    kernels = importlib.import_module(aot.__name__.rsplit(".", 1)[0] + ".ops").KERNELS
    build = importlib.import_module(aot.__name__ + ".build")

    def label(task):
        spec = kernels[task.kernel_index]
        return kernel_configs.series_name(spec.name, spec.variant, build.config_label(build.config_dict(aot.task_config(task))))

    configs, dtypes = kernel_configs.params("default")
    for arch in kernel_configs.COMPILE_ARCHS:
        planned = {label(t) for t in aot.plan(**bench_compile.compile_request(aot, configs, dtypes, arch)) if t.offered}
        offered = {kernel_configs.series_name(*s) for s in aot.offered_series(arch)}
        never = sorted((set(configs) & offered) - planned)
        assert never == [], f"listed and offered on {arch}, but never compiled by the suite: {never}"


def test_a_commit_whose_library_lacks_the_architecture_skips_with_that_reason(monkeypatch):
    """The histories of sm_100, sm_120, gfx942 and gfx950 start where the library learnt them:
    every older commit is a skip that says why."""
    aot, _ = _fake_aot([], [])
    aot.ARCHS = {"sm_90": None, "sm_80": None}
    monkeypatch.setattr(bench_compile, "compile_check", lambda: (aot, None))
    monkeypatch.setenv(kernel_configs.ARCH_ENV, "gfx942")
    bench = bench_compile.KernelResources()
    cache = bench.setup_cache()
    with pytest.raises(NotImplementedError, match="does not know gfx942"):
        bench.track_registers(cache, "linear_act/tile 128x128x64 w8 s2 wpe2 nk16 kp2", "bf16")


def test_the_machine_name_selects_the_architecture(monkeypatch):
    assert kernel_configs.arch_of_machine("compile-sm_100-triton-3.6.0") == "sm_100"
    assert kernel_configs.arch_of_machine("compile-gfx950-triton-3.9.0") == "gfx950"
    assert kernel_configs.arch_of_machine("h200-a-gpu0") is None
    monkeypatch.setenv(kernel_configs.ARCH_ENV, "sm_75")
    with pytest.raises(ValueError, match="sm_75"):
        kernel_configs.compile_arch()
