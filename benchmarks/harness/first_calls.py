"""The first call of each measured combination, timed: on the GPU runner it is what the time
model (benchmarks.suite_cost) guesses most (a torch.compile cold or from Inductor's on-disk
caches, max-autotune's GEMM shapes, Triton's compiles and autotuning), so the GPU session files
it (tools/gpu_runner/session.sh sets $FUSED_MLP_FIRST_CALLS) and benchmarks.measured_inputs turns
the records into the measured value of each guessed input, in stages.tsv.

One JSON file per combination in that folder: benchmark, case, impl, mode, seconds, and
Inductor's FX-graph cache misses and hits during the call (a miss: a cold compile).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from asv_results.safe_read import read_json

FIRST_CALLS_ENV = "FUSED_MLP_FIRST_CALLS"


def _inductor_cache() -> tuple[int, int] | None:
    """(FX-graph cache misses, hits) so far in this process, or None where torch does not count them."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    inductor = counters.get("inductor", {})
    return int(inductor.get("fxgraph_cache_miss", 0)), int(inductor.get("fxgraph_cache_hit", 0))


def timed_first_call(call, benchmark: str, case_key: str, impl: str, mode: str):
    """call()'s result; where $FUSED_MLP_FIRST_CALLS names a folder, its wall seconds filed there."""
    folder = os.environ.get(FIRST_CALLS_ENV)
    if not folder:
        return call()
    before = _inductor_cache()
    start = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - start
    after = _inductor_cache()
    record = {"benchmark": benchmark, "case": case_key, "impl": impl, "mode": mode, "seconds": seconds}
    if before is not None and after is not None:
        record["fxgraph_cache_miss"], record["fxgraph_cache_hit"] = (a - b for a, b in zip(after, before))
    name = hashlib.sha256(json.dumps([benchmark, case_key, impl, mode]).encode()).hexdigest()[:32] + ".json"
    tmp = Path(folder, name + ".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, Path(folder, name))  # whole or absent: a killed process leaves no half file
    return out


def collect(folder: Path) -> list[dict]:
    """Every record filed in `folder` (one that cannot be read is left out)."""
    records = []
    for path in sorted(Path(folder).glob("*.json")):
        doc, reason = read_json(path, Path(folder))
        if reason is None and isinstance(doc, dict) and isinstance(doc.get("seconds"), (int, float)):
            records.append(doc)
    return records
