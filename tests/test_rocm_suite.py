"""The suite on a ROCm build of torch (MI300X, MI355X), tested here with torch.version.hip and the
device patched: which implementations run, why the others do not, and the runner state."""

import dataclasses
import types

import pytest
import torch

from benchmarks.harness import amd_state, fp8, fp8_quantize, implementations, runner_state
from benchmarks.harness.tensors import make_inputs

from workload import device_specs
from benchmarks.harness.ops import linear_act as linear_act_peers
from workload.case import Case
from tests.test_runner_state import fake_nvml


@pytest.fixture
def rocm(monkeypatch):
    """A ROCm build with one MI300X; `rocm.gfx(name)` swaps the device, `rocm.blas(backend)` the BLAS library."""
    monkeypatch.setattr(torch.version, "hip", "6.4.43482")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 4))  # what ROCm reports
    state = types.SimpleNamespace(gcnArchName="gfx942:sramecc+:xnack-")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: state)
    backend = {"now": torch._C._BlasBackend.Cublas}
    monkeypatch.setattr(torch.backends.cuda, "preferred_blas_library", lambda *a: backend["now"])
    for cached in (linear_act_peers.hipblaslt_missing, fp8.fp8_tensor_cores_missing):
        cached.cache_clear()
    yield types.SimpleNamespace(gfx=lambda name: setattr(state, "gcnArchName", name),
                                blas=lambda b: backend.update(now=b))
    for cached in (linear_act_peers.hipblaslt_missing, fp8.fp8_tensor_cores_missing):
        cached.cache_clear()


LINEAR = Case("linear_act", 7, 64, 96, "bf16", "gelu_tanh", bias=True)


def test_on_rocm_every_torch_and_fused_implementation_runs_and_the_cublaslt_peer_says_why_not(rocm):
    reasons = {name: implementations.unavailable_reason(LINEAR, name, "cuda") for name in implementations.names("linear_act")}
    for name in ("fused", "eager", "compile", "compile_max_autotune"):
        assert reasons[name] is None, (name, reasons[name])
    assert "hipBLASLt" in reasons["cublaslt"] and "Cublas" in reasons["cublaslt"]


def test_the_cublaslt_peer_runs_on_rocm_where_torch_reaches_hipblaslt(rocm):
    rocm.blas(torch._C._BlasBackend.Cublaslt)
    assert implementations.unavailable_reason(LINEAR, "cublaslt", "cuda") is None


def test_the_cublaslt_peer_is_untouched_on_a_cuda_build(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    linear_act_peers.hipblaslt_missing.cache_clear()
    assert implementations.unavailable_reason(LINEAR, "cublaslt", "cuda") is None
    linear_act_peers.hipblaslt_missing.cache_clear()


@pytest.mark.parametrize("gfx, encoding", [("gfx942:sramecc+:xnack-", torch.float8_e4m3fnuz),
                                           ("gfx950:sramecc+:xnack-", torch.float8_e4m3fn)])
def test_w8a8_cases_run_on_both_instinct_generations_in_their_own_encoding(rocm, gfx, encoding):
    """MI300 computes e4m3fnuz only, MI355X OCP e4m3fn: the W8A8 Cases are quantized in the
    device's one, and fused and _scaled_mm run them."""
    rocm.gfx(gfx)
    case = Case("linear_act", 16, 64, 96, "fp8", "gelu_tanh", bias=True)  # W8A8, per-row scales
    for impl in ("fused", "eager", "scaled_mm"):
        assert fp8.unavailable(case, impl, "cuda") is None, impl
    assert fp8_quantize.w8a8_dtype("cuda") == encoding and fp8_quantize.w8a8_dtype("cpu") == torch.float8_e4m3fn


def test_w8a8_inputs_on_an_mi300_are_e4m3fnuz_and_a_library_without_them_is_named(rocm, monkeypatch):
    case = Case("gated_mlp", 16, 64, 96, "fp8", "silu")
    # the inputs are made on this CPU: the encoding is the MI300's, as w8a8_dtype("cuda") gives it above
    monkeypatch.setattr(fp8_quantize, "w8a8_dtype", lambda device: torch.float8_e4m3fnuz)
    inputs = fp8_quantize.quantize_inputs(case, make_inputs(dataclasses.replace(case, dtype="bf16")))
    assert {inputs[n].dtype for n in ("x", "w_gate", "w_up", "w_down")} == {torch.float8_e4m3fnuz}
    assert inputs["x"].float().abs().max() == 240.0  # e4m3fnuz's largest: amax / 240 scales
    w8a16 = fp8_quantize.quantize_inputs(dataclasses.replace(case, dtype="w8a16"),
                                         make_inputs(dataclasses.replace(case, dtype="bf16")))
    assert w8a16["w_gate"].dtype == torch.float8_e4m3fn  # W8A16 up-casts e4m3fn bytes everywhere
    old_library = types.SimpleNamespace(gated_mlp_fp8=lambda **kw: None)  # a commit from before native_fp8_dtype
    assert "takes no e4m3fnuz" in fp8.fused_missing(case, old_library, "cuda")
    assert fp8.fused_missing(case, types.SimpleNamespace(gated_mlp_fp8=len, native_fp8_dtype=len), "cuda") is None


def test_w8a8_cases_are_refused_on_an_instinct_gpu_without_fp8(rocm):
    rocm.gfx("gfx90a:sramecc+:xnack-")  # MI250
    case = Case("linear_act", 16, 64, 96, "fp8", "gelu_tanh", bias=True)
    reason = fp8.unavailable(case, "fused", "cuda")
    assert "needs FP8 MFMAs" in reason and "gfx90a" in reason
    assert fp8.unavailable(case, "eager", "cuda") is None  # dequantized: runs anywhere


def test_liger_is_judged_on_rocm_as_on_cuda(rocm, monkeypatch):
    """Liger-Kernel's Triton kernels support ROCm: nothing ROCm-specific keeps them out."""
    gated = Case("gated_mlp", 7, 64, 96, "bf16", "silu")
    on_rocm = implementations.unavailable_reason(gated, "liger_mlp", "cuda")
    monkeypatch.setattr(torch.version, "hip", None)
    assert implementations.unavailable_reason(gated, "liger_mlp", "cuda") == on_rocm


class FakeSmi:
    class AmdSmiClkType:
        GFX, MEM = "gfx", "mem"

    class AmdSmiTemperatureType:
        HOTSPOT = "hotspot"

    class AmdSmiTemperatureMetric:
        CURRENT = "current"

    def amdsmi_init(self):
        pass

    def amdsmi_shut_down(self):
        self.shut = True

    def amdsmi_get_processor_handles(self):
        return ["h0"]

    def amdsmi_get_clock_info(self, handle, kind):
        return {"clk": 2100 if kind == "gfx" else 1300, "max_clk": 2100 if kind == "gfx" else 1300}

    def amdsmi_get_power_info(self, handle):
        return {"current_socket_power": 512, "power_limit": 750}

    def amdsmi_get_gpu_asic_info(self, handle):
        return {"market_name": "AMD Instinct MI300X"}

    def amdsmi_get_temp_metric(self, handle, kind, metric):
        return 61

    def amdsmi_get_gpu_driver_info(self, handle):
        return {"driver_version": "6.10.5"}


def test_runner_state_on_rocm_comes_from_amd_smi_in_the_nvml_keys(monkeypatch):
    monkeypatch.setattr(runner_state, "_torch_hip", lambda: "6.4.43482")
    smi = FakeSmi()
    snap = runner_state.snapshot(amd_loader=lambda: (smi, None))
    assert snap["recorded"] and snap["software"]["driver"] == "6.10.5" and snap["software"]["hip"] == "6.4.43482"
    gpu = snap["gpus"][0]
    assert (gpu["name"], gpu["sm_clock_mhz"], gpu["power_w"], gpu["power_limit_w"], gpu["temperature_c"]) == \
        ("AMD Instinct MI300X", 2100, 512, 750, 61)
    assert set(gpu) == set(runner_state.gpu_state(fake_nvml()[0], 0))  # the keys NVML's snapshot has
    assert smi.shut


def test_runner_state_on_rocm_without_amdsmi_says_it_is_not_available(monkeypatch):
    monkeypatch.setattr(runner_state, "_torch_hip", lambda: "6.4.43482")
    monkeypatch.setattr(amd_state.importlib, "import_module",
                        lambda name: (_ for _ in ()).throw(ImportError(f"No module named {name!r}")))
    for snap in (runner_state.snapshot(), runner_state.gpu_snapshot()):
        assert snap["recorded"] is False and "amdsmi" in snap["reason"] and "not installed" in snap["reason"]


def test_device_specs_know_the_new_runners_by_the_name_torch_gives():
    for name, expected in (("NVIDIA B200", "B200"), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000"),
                           ("AMD Instinct MI300X", "MI300X"), ("AMD Instinct MI355X", "MI355X"),
                           ("NVIDIA H200", "H200")):
        spec = device_specs.spec_for(name)
        assert spec is not None and spec.name == expected and spec.source
        assert spec.memory_gbps > 0 and all(v > 0 for v in spec.dense_tflops.values())
    assert device_specs.spec_for("NVIDIA GeForce GTX 1080") is None
    assert "tf32" not in device_specs.SPECS["MI355X"].dense_tflops  # CDNA 4 has no TF32


def test_the_cost_model_carries_the_h200_fraction_of_peak_to_another_device(monkeypatch):
    from benchmarks import suite_cost

    monkeypatch.setattr(suite_cost, "INPUTS", dict(suite_cost.INPUTS))
    h200_bf16, h200_copy = suite_cost.INPUTS["tflops"][0]["bf16"], suite_cost.INPUTS["copy_gbps"][0]
    suite_cost.on_device("MI300X")
    spec, h200 = device_specs.SPECS["MI300X"], device_specs.SPECS["H200"]
    assert suite_cost.INPUTS["tflops"][0]["bf16"] == pytest.approx(h200_bf16 * spec.dense_tflops["bf16"] / h200.dense_tflops["bf16"])
    assert suite_cost.INPUTS["copy_gbps"][0] == pytest.approx(h200_copy * spec.memory_gbps / h200.memory_gbps)
    assert "MI300X" in suite_cost.INPUTS["tflops"][1]
    with pytest.raises(ValueError, match="MI355X has no tf32 peak"):
        device_specs.scaled(400.0, "tf32", "H200", "MI355X")
