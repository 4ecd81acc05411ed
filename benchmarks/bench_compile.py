"""Static compile metrics: what every kernel config of the library costs on sm_90 (or the
architecture $FUSED_MLP_COMPILE_ARCH names: sm_100, sm_120, gfx942, gfx950) — registers,
spill bytes, shared memory and SASS instructions — from the library's compile check
(`python -m fused_mlp.aot`). No GPU is needed and nothing is timed: the values change only when
a kernel or its configs do, so the history shows such a change at the commit that made it.
Lower is better for each, as for every metric asv stores. They are recorded on a machine of
their own (compile-<arch>-triton-<version>; benchmarks.run sets the variable from that name), never on a GPU runner's time (benchmarks.run leaves
this module out unless asked with -b).

The params are the suite's fixed list (workload.kernel_configs), not the library's: a config a
commit does not offer is skipped with that reason, a commit without a compile check
(no fused_mlp.aot) skips everything, and a commit whose library does not import records every
value as a failure (setup_cache raises). A whole-benchmark skip or failure is filed with its
reason once (benchmarks/skip_reasons.py). Nothing here imports fused_mlp at import time.

    python -m benchmarks.bench_compile --missing    # configs HEAD's library offers that the list lacks
"""

import sys
import traceback

from benchmarks import skip_reasons
from benchmarks.common import file_setup_outcomes, grid_name, skip
from workload.kernel_configs import COMPILE_ARCHS, KERNEL_CONFIGS, compile_arch, params, series_name
from benchmarks.harness.library import compile_check


BENCHMARK = "bench_compile.KernelResources"  # asv's name for the class below
METRICS = ("registers", "spill_bytes", "shared_memory", "sass_instructions")  # its track_<metric>s
FIELDS = ("registers", "spill_bytes", "shared_bytes", "sass_instructions")  # each one's field of a record
# the reason filed for every skipped config of a commit that compiled (_field's skip, said once)
NOT_OFFERED = "the config is not offered in that dtype on {arch} by the library at this commit"


class KernelResources:
    params = params(grid_name())
    param_names = ["kernel_config", "dtype"]
    timeout = 1800  # setup_cache compiles every config once (minutes on 2 cores, cached on disk after)
    version = "1"

    def setup_cache(self):
        try:
            cache = self._compile_all()
        except Exception as e:  # the library does not import, or its check broke: every value a failure
            file_setup_outcomes(BENCHMARK, METRICS, ("failed", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"))
            raise
        if "skip" in cache:
            file_setup_outcomes(BENCHMARK, METRICS, ("skipped", cache["skip"]))
        else:  # a listed config the commit does not offer is skipped (_field): one reason says so for all
            file_setup_outcomes(BENCHMARK, METRICS, ("skipped", NOT_OFFERED.format(arch=compile_arch())),
                                self._failures(cache["records"], set(self.params[0])))
        return cache

    @staticmethod
    def _failures(records: dict, listed: set) -> list[dict]:
        """A reasons entry for each metric of each listed config that did not compile (_field raises)."""
        return [skip_reasons.entry(f"{BENCHMARK}.track_{metric}", {"kernel_config": config, "dtype": dtype}, "failed",
                                   f"did not compile for {compile_arch()}: {record['problem']}")
                for (config, dtype), record in sorted(records.items()) if config in listed
                for metric, field in zip(METRICS, FIELDS) if record[field] is None]

    def _compile_all(self) -> dict:
        aot, reason = compile_check()
        if aot is None:
            return {"skip": reason}
        if aot.INTERPRETER:
            return {"skip": "TRITON_INTERPRET is set: the kernels are interpreted and cannot be compiled for a GPU"}
        arch = compile_arch()
        if arch not in aot.ARCHS:  # an older commit: its library does not know this architecture
            return {"skip": f"fused_mlp at this commit does not know {arch} (its compile check: {sorted(aot.ARCHS)})"}
        records = aot.check(**compile_request(aot, *self.params, arch=arch))
        return {"records": {(series_name(r.kernel, r.variant, r.config_label), r.dtype): r.to_dict()
                            for r in records}}

    def _field(self, cache, kernel_config, dtype, field):
        if "skip" in cache:
            skip(cache["skip"])
        record = cache["records"].get((kernel_config, dtype))
        if record is None:
            skip(f"{kernel_config} is not offered for {dtype} on {compile_arch()} by the library at this commit")
        if record[field] is None:
            raise RuntimeError(f"{kernel_config} {dtype} did not compile for {compile_arch()}: {record['problem']}")
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


def compile_request(aot, configs: list[str], dtypes: list[str], arch: str = "sm_90") -> dict:
    """aot.check's (and aot.plan's) arguments for the listed configs on `arch`: the kernels the
    commit has, the suite's dtypes it knows, offered configs only (no candidates=True), the
    costliest epilogue."""
    kernels = tuple(sorted({name.split("/", 1)[0] for name in configs}))
    known = {spec_name for spec_name, _, _ in aot.offered_series(arch)}
    return {"archs": (arch,), "dtypes": tuple(d for d in dtypes if d in aot.DTYPES),
            "kernels": tuple(k for k in kernels if k in known), "activations": (aot.COSTLIEST_ACTIVATION,)}


def missing_configs() -> list[str]:
    """Configs HEAD's library offers on any of COMPILE_ARCHS that workload.kernel_configs does not list."""
    aot, reason = compile_check()
    if aot is None:
        raise RuntimeError(reason)
    return sorted({series_name(*s) for arch in COMPILE_ARCHS for s in aot.offered_series(arch)} - set(KERNEL_CONFIGS))


if __name__ == "__main__":
    if sys.argv[1:] != ["--missing"]:
        print("usage: python -m benchmarks.bench_compile --missing", file=sys.stderr)
        sys.exit(2)
    missing = missing_configs()
    print("\n".join(f'    "{name}",' for name in missing) if missing else "every offered config is listed")
    sys.exit(1 if missing else 0)
