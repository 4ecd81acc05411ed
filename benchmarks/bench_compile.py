"""Static compile metrics: what every kernel config of the library costs on sm_90 — registers,
spill bytes, shared memory and SASS instructions — from the library's compile check
(`python -m fused_mlp.aot`). No GPU is needed and nothing is timed: the values change only when
a kernel or its configs do, so the history shows such a change at the commit that made it.
Lower is better for each, as for every metric asv stores.

Commits whose library has no compile check (no fused_mlp.aot) are skipped with that reason.
"""

from .common import grid_name, skip
from .harness.library import compile_check

ARCH = "sm_90"


def _scope(aot) -> dict:
    """What to compile: everything; the CPU pipeline check (tiny grid) one kernel in bf16."""
    if grid_name() == "tiny":
        return {"kernels": ("linear_act",), "dtypes": ("bf16",)}
    return {"kernels": None, "dtypes": aot.DTYPES}


def _series_name(kernel: str, variant: str, config_label: str) -> str:
    """The kernel_config parameter: 'linear_act/tile 128x128x64 w8 s3'."""
    return f"{kernel}/{variant} {config_label}"


def _params():
    aot, _ = compile_check()
    if aot is None:
        return [["(none)"], ["bf16"]]
    scope = _scope(aot)
    keys = sorted({_series_name(*series) for series in aot.offered_series(ARCH, scope["kernels"])})
    return [keys, list(scope["dtypes"])]


class KernelResources:
    params = _params()
    param_names = ["kernel_config", "dtype"]
    timeout = 1800  # setup_cache compiles every config once (minutes on 2 cores, cached on disk after)
    version = "1"

    def setup_cache(self):
        aot, reason = compile_check()
        if aot is None:
            return {"skip": reason}
        if aot.INTERPRETER:
            return {"skip": "TRITON_INTERPRET is set: the kernels are interpreted and cannot be compiled for a GPU"}
        scope = _scope(aot)
        # offered configs only (no candidates=True), in the costliest epilogue only
        records = aot.check(archs=(ARCH,), dtypes=scope["dtypes"], kernels=scope["kernels"],
                            activations=(aot.COSTLIEST_ACTIVATION,))
        return {"records": {(_series_name(r.kernel, r.variant, r.config_label), r.dtype): r.to_dict()
                            for r in records}}

    def _field(self, cache, kernel_config, dtype, field):
        if "skip" in cache:
            skip(cache["skip"])
        record = cache["records"].get((kernel_config, dtype))
        if record is None:
            skip(f"{kernel_config} is not offered for {dtype} on {ARCH}")
        if record[field] is None:
            raise RuntimeError(f"{kernel_config} {dtype} did not compile for {ARCH}: {record['problem']}")
        return record[field]

    def track_registers(self, cache, kernel_config, dtype):
        return self._field(cache, kernel_config, dtype, "registers")

    track_registers.unit = "registers"

    def track_spill_bytes(self, cache, kernel_config, dtype):
        return self._field(cache, kernel_config, dtype, "spill_bytes")

    track_spill_bytes.unit = "bytes"

    def track_shared_memory(self, cache, kernel_config, dtype):
        return self._field(cache, kernel_config, dtype, "shared_bytes")

    track_shared_memory.unit = "bytes"

    def track_sass_instructions(self, cache, kernel_config, dtype):
        return self._field(cache, kernel_config, dtype, "sass_instructions")

    track_sass_instructions.unit = "instructions"
