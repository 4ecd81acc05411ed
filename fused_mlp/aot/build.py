"""Compile one kernel config for one architecture and read what it costs (runs in a worker)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .._arch import ARCHS
from .amdgcn import SPILL_BYTES_PER_REGISTER, read_amdgcn
from .cubin import sass_instructions
from .rules import problems


@dataclass(frozen=True)
class Task:
    kernel_index: int  # into fused_mlp.ops.KERNELS
    config_index: int  # into that kernel's candidates
    arch: str
    dtype: str  # "bf16", "fp16", "fp32" (IEEE dot) or "tf32" (fp32 tensors, TF32 dot)
    activation: str
    offered: bool  # offered to the autotuner on this arch (fused_mlp.ops._tuning)
    not_offered_because: str | None = None


@dataclass
class Record:
    kernel: str
    variant: str
    arch: str
    dtype: str
    activation: str
    config: dict  # the tile sizes and num_warps / num_stages
    offered: bool
    not_offered_because: str | None
    triton: str
    registers: int | None = None  # per thread (NVIDIA); VGPRs per lane (AMD: .vgpr_count)
    spill_bytes: int | None = None  # bytes of spill stores per thread (ptxas -v); AMD: 4 B per spilled VGPR/SGPR
    stack_bytes: int | None = None  # stack frame per thread: spills and calls (libdevice functions)
    shared_bytes: int | None = None  # dynamic (the compiler's allocation) + static; AMD: LDS
    tensor_core_instructions: int | None = None  # wgmma + tcgen05 + mma in the PTX; MFMAs in the AMDGCN
    tensor_core_ops: dict = field(default_factory=dict)  # {"wgmma": n, "tcgen05": n, "mma": n} or {"mfma": n}
    sass_instructions: int | None = None  # SASS (NVIDIA) or AMDGCN instructions
    matrix_instruction: str | None = None  # the most used tensor-core instruction, e.g. v_mfma_f32_32x32x16_fp8_fp8
    sgpr_count: int | None = None  # AMD only
    agpr_count: int | None = None  # AMD only: accumulation registers
    compile_seconds: float | None = None  # this check's time: a compile Triton's cache held is read, ~0
    ok: bool = False
    problem: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def config_label(self) -> str:
        return config_label(self.config)


def config_label(config: dict) -> str:
    """'128x256x64 w8 s3': the BLOCK sizes, num_warps and num_stages of a config, then the
    persistent variant's flags ('128x256x64 w8 s3 tma sub2')."""
    from ..ops._tuning import variant_flags

    tiles = "x".join(str(config[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if k in config)
    return " ".join((f"{tiles} w{config['num_warps']} s{config['num_stages']}", *variant_flags(config)))


def config_dict(config) -> dict:
    """A triton.Config as the record keeps it: its kwargs, num_warps and num_stages."""
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


_PTX_TENSOR_CORE_OPS = {"wgmma": "wgmma.mma_async.", "tcgen05": "tcgen05.mma.", "mma": "mma.sync.aligned."}
_PTX_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:wgmma\.mma_async|tcgen05\.mma|mma\.sync\.aligned)[\w.:]*)", re.MULTILINE)
_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}  # fp8: the arch's own
_RESOURCES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGISTERS = re.compile(r"Used (\d+) registers")


def _example(spec, dtype: str, activation: str, arch):
    """The kernel's arguments for a representative problem, as the launcher builds them on
    `arch`: W8A8 (fp8) in its FP8 tensor cores' own e4m3 (e4m3fnuz on gfx942, as
    quantize_fp8(..., fp8_dtype=native_fp8_dtype(device)) makes them there); tf32 as torch's
    allow_tf32 makes it."""
    import torch

    from ..quantize import FP8_DTYPE, FP8_FORMATS

    torch_dtype = (FP8_FORMATS.get(arch.fp8_format, FP8_DTYPE) if dtype == "fp8"
                   else getattr(torch, _TORCH_DTYPES[dtype]))
    allow = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        args, constexprs = spec.example(torch_dtype, activation)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow
    return args, constexprs


def _cuobjdump() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def _read_cubin(cubin: bytes) -> tuple[dict, int]:
    """(REG/STACK/SHARED/LOCAL from Triton's own cuobjdump, SASS instruction count from the ELF)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        usage = subprocess.run([str(_cuobjdump()), "--dump-resource-usage", f.name], capture_output=True,
                               text=True, check=True).stdout
    found = _RESOURCES.search(usage)
    if found is None:
        raise RuntimeError(f"cuobjdump printed no resource usage: {usage[:200]!r}")
    reg, stack, shared, local = map(int, found.groups())
    return {"registers": reg, "stack": stack, "static_shared": shared, "local": local}, sass_instructions(cubin)


@contextlib.contextmanager
def _ptxas_summary_into(log: io.StringIO, always_compile: bool):
    """Catch the ptxas -v summary Triton prints (registers, stack frame, spill stores) in `log`;
    with `always_compile`, compile afresh (a cache hit would skip ptxas)."""
    knobs = {"TRITON_ALWAYS_COMPILE": "1" if always_compile else None, "TRITON_DUMP_PTXAS_LOG": "1"}
    saved = {k: os.environ.get(k) for k in knobs}
    _set_environment(knobs)
    try:
        with contextlib.redirect_stdout(log):
            yield
    finally:
        _set_environment(saved)


def _set_environment(values: dict) -> None:
    """Each variable set to its value, or unset where the value is None."""
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# Beside a compile in Triton's cache, the ptxas summary it printed: a later check of the same
# compile (Triton's cache key: the kernel's source and what it calls, constexprs, options, target,
# Triton's and ptxas's versions) reads the cubin and this instead of compiling again. In CI the
# tiny asv run's static compile metrics compile some of the configs the compile check then needs.
PTXAS_SUMMARY_FILE = "fused_mlp_ptxas_summary.txt"


def _compile_with_summary(compile_now, nvidia: bool):
    """(compiled kernel, ptxas summary: "" on AMD, whose costs are all in the AMDGCN): Triton's
    cached compile where its summary was kept beside it, else a compile (afresh if the cache holds
    it without a summary, as a launch leaves it), whose summary is then kept."""
    from triton.runtime.cache import get_cache_manager

    log = io.StringIO()
    with _ptxas_summary_into(log, always_compile=False):
        compiled = compile_now()
    if not nvidia:
        return compiled, ""
    cache = get_cache_manager(compiled.metadata.hash)
    if _PTXAS_REGISTERS.search(log.getvalue()) is None:  # a cache hit: ptxas did not run
        kept = cache.get_file(PTXAS_SUMMARY_FILE)
        if kept is not None:
            return compiled, Path(kept).read_text()
        log = io.StringIO()
        with _ptxas_summary_into(log, always_compile=True):
            compiled = compile_now()
    cache.put(log.getvalue(), PTXAS_SUMMARY_FILE, binary=False)
    return compiled, log.getvalue()


def compile_task(task: Task) -> Record:
    from ..ops import KERNELS
    from . import task_config

    return compile_config(KERNELS[task.kernel_index], task_config(task), task.arch, task.dtype, task.activation,
                          task.offered, task.not_offered_because)


def compile_config(spec, config, arch_name: str, dtype: str, activation: str, offered: bool = True,
                   not_offered_because: str | None = None) -> Record:
    """Compile kernel `spec` with `config` for `arch_name` and judge it by the rules."""
    import triton

    from .._triton_compat import compile_for_gpu

    arch = ARCHS[arch_name]
    record = Record(spec.name, spec.variant, arch.name, dtype, activation, config_dict(config), offered,
                    not_offered_because, triton.__version__)
    args, constexprs = _example(spec, dtype, activation, arch)
    start = time.perf_counter()
    try:
        compiled, ptxas_log = _compile_with_summary(
            lambda: compile_for_gpu(spec.kernel.fn, args, {**constexprs, **config.all_kwargs()},
                                    "hip" if arch.vendor == "amd" else "cuda",
                                    arch.name if arch.vendor == "amd" else arch.capability, arch.warp_size),
            arch.vendor != "amd")
    except Exception as exc:  # the compiler's own message is the problem to report
        record.compile_seconds = time.perf_counter() - start
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        record.problem = f"does not compile: {first.strip()[:300]}"
        return record
    record.compile_seconds = time.perf_counter() - start
    if arch.vendor == "amd":
        _read_amd(record, compiled)
    else:
        _read_nvidia(record, compiled, ptxas_log)
    found = problems(arch, dtype, config.kwargs, record.registers, record.spill_bytes, record.shared_bytes,
                     record.tensor_core_ops, spec.tensor_cores)
    record.ok = not found
    record.problem = "; ".join(found) or None
    return record


def _read_nvidia(record: Record, compiled, ptxas_log: str) -> None:
    """Registers and spills from ptxas -v, shared memory and SASS from the cubin, tensor-core ops from the PTX."""
    usage, record.sass_instructions = _read_cubin(compiled.asm["cubin"])
    ptx = compiled.asm["ptx"]
    record.tensor_core_ops = {op: ptx.count(text) for op, text in _PTX_TENSOR_CORE_OPS.items()}
    record.tensor_core_instructions = sum(record.tensor_core_ops.values())
    used = Counter(_PTX_INSTRUCTION.findall(ptx)).most_common(1)
    record.matrix_instruction = used[0][0] if used else None
    frame, registers = _PTXAS_FRAME.search(ptxas_log), _PTXAS_REGISTERS.search(ptxas_log)
    if frame is None or registers is None:
        raise RuntimeError("ptxas printed no resource summary; is TRITON_DUMP_PTXAS_LOG honoured by this Triton?")
    record.registers = int(registers.group(1))
    record.stack_bytes, record.spill_bytes = int(frame.group(1)), int(frame.group(2))
    record.shared_bytes = int(compiled.metadata.shared) + usage["static_shared"]


def _read_amd(record: Record, compiled) -> None:
    """Everything from the AMDGCN text: the kernel descriptor's metadata and the MFMAs in the code."""
    found = read_amdgcn(compiled.asm["amdgcn"])
    record.registers, record.sgpr_count, record.agpr_count = (found["vgpr_count"], found["sgpr_count"],
                                                              found["agpr_count"])
    record.spill_bytes = SPILL_BYTES_PER_REGISTER * (found["vgpr_spill_count"] + found["sgpr_spill_count"])
    record.stack_bytes = found["private_segment_fixed_size"]
    record.shared_bytes = max(found["group_segment_fixed_size"], int(compiled.metadata.shared))
    record.tensor_core_ops = {"mfma": sum(found["mfma"].values())}
    record.tensor_core_instructions = record.tensor_core_ops["mfma"]
    record.matrix_instruction = max(found["mfma"], key=found["mfma"].get) if found["mfma"] else None
    record.sass_instructions = found["instructions"]


def worker_init() -> None:
    """Triton 3.9 warns, per process, that its FP-fusion default will change; the compile uses the
    default a launch would, so the warning says nothing here."""
    import warnings

    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
