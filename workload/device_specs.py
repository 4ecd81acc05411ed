"""The vendors' peak numbers of the GPUs the suite runs on: dense TFLOP/s per dtype and memory
bandwidth, each with the document it comes from (docs/devices.md). Torch-free: the cost model
and the dashboard read them.

Measured ceilings (bench_device) are what the roofline divides by. These peaks say how far a
measured ceiling is from the datasheet, and let the cost model (benchmarks.suite_cost --device)
carry the H200's measured fraction of peak over to another device.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceSpec:
    name: str  # "B200"
    arch: str  # the fused_mlp architecture it is checked as: "sm_100"
    names: tuple[str, ...]  # how torch.cuda.get_device_name spells it, any of these as a substring
    dense_tflops: dict[str, float]  # per dtype: "bf16", "fp16", "tf32", "fp32" (no tensor cores), "fp8"
    memory_gbps: float  # the datasheet's memory bandwidth, GB/s
    memory: str  # "HBM3e", "GDDR7"
    source: str


# Dense figures: where a datasheet gives only "with sparsity" (2:4) numbers they are halved.
SPECS: dict[str, DeviceSpec] = {s.name: s for s in (
    DeviceSpec("H200", "sm_90", ("H200",), {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0, "fp8": 1979.0},
               4800.0, "HBM3e", "NVIDIA H200 Tensor Core GPU datasheet (SXM); sparse figures halved"),
    DeviceSpec("B200", "sm_100", ("B200",), {"bf16": 2250.0, "fp16": 2250.0, "tf32": 1100.0, "fp32": 75.0,
                                             "fp8": 4500.0},
               8000.0, "HBM3e", "NVIDIA HGX B200 datasheet, per GPU (the 8-GPU figures / 8); sparse figures halved"),
    DeviceSpec("RTX PRO 6000", "sm_120", ("RTX PRO 6000",), {"bf16": 500.0, "fp16": 500.0, "tf32": 250.0,
                                                             "fp32": 125.0, "fp8": 1000.0},
               1792.0, "GDDR7", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (4 PFLOPS FP4 with "
               "sparsity: dense FP8 a quarter of it, FP16/BF16 an eighth; FP32 125 TFLOPS)"),
    DeviceSpec("MI300X", "gfx942", ("MI300X",), {"bf16": 1307.4, "fp16": 1307.4, "tf32": 653.7, "fp32": 163.4,
                                                 "fp8": 2614.9},
               5300.0, "HBM3", "AMD Instinct MI300X data sheet (dense; FP32 matrix)"),
    DeviceSpec("MI355X", "gfx950", ("MI355X",), {"bf16": 2516.6, "fp16": 2516.6, "fp32": 157.3, "fp8": 5033.2},
               8000.0, "HBM3E", "AMD Instinct MI355X data sheet (dense; CDNA 4 has no TF32)"),
)}


def spec_for(device_name: str) -> DeviceSpec | None:
    """The spec of the device torch names `device_name` ("NVIDIA B200", "AMD Instinct MI300X"), or None."""
    return next((s for s in SPECS.values() if any(n.lower() in device_name.lower() for n in s.names)), None)


def scaled(measured: float, dtype_or_memory: str, source: str, target: str) -> float:
    """A ceiling measured on device `source`, carried to `target` at the same fraction of its
    peak ("memory" for bandwidth, else a dtype). A dtype `target` lacks raises ValueError."""
    def peak(name: str) -> float:
        spec = SPECS[name]
        if dtype_or_memory == "memory":
            return spec.memory_gbps
        if dtype_or_memory not in spec.dense_tflops:
            raise ValueError(f"{name} has no {dtype_or_memory} peak (its datasheet lists {sorted(spec.dense_tflops)})")
        return spec.dense_tflops[dtype_or_memory]
    return measured * peak(target) / peak(source)
