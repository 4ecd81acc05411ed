"""The compile check reuses a compile Triton's cache holds together with the ptxas summary kept
beside it (fused_mlp/aot/build.py): the record is read, not compiled again; without the
summary (a launch's compile) it compiles afresh and keeps one."""

from tests.test_aot import result_of

REUSE = '''
import json, os, pathlib
os.environ["TRITON_CACHE_DIR"] = %(cache)r
from fused_mlp.aot import plan, task_config
from fused_mlp.aot.build import PTXAS_SUMMARY_FILE, compile_config
from fused_mlp.ops import KERNELS

task = next(t for t in plan(("sm_80",), ("bf16",), kernels=("linear_act",), variants=("tile",)) if t.offered)
spec, config = KERNELS[task.kernel_index], task_config(task)
cache = pathlib.Path(os.environ["TRITON_CACHE_DIR"])

def record():
    return compile_config(spec, config, "sm_80", "bf16", "gelu").to_dict()

out = {"fresh": record()}
(summary,) = cache.glob("*/" + PTXAS_SUMMARY_FILE)
out["kept"] = summary.read_text()
# planted: a summary no real compile of this kernel prints; reading it proves nothing recompiled
summary.write_text("ptxas info    : Used 7 registers, used 0 barriers, 0 bytes stack frame, "
                   "0 bytes spill stores, 0 bytes spill loads")
out["reused"] = record()
summary.unlink()  # the cached compile alone, as a launch leaves it
out["recompiled"] = record()
out["kept_again"] = summary.read_text() if summary.exists() else None
print("RESULT", json.dumps(out))
'''
SAME = ("registers", "spill_bytes", "stack_bytes", "shared_bytes", "tensor_core_ops", "sass_instructions", "ok")


def test_a_cached_compile_is_read_with_its_kept_summary_and_recompiled_without_it(tmp_path):
    out = result_of(REUSE % {"cache": str(tmp_path / "triton-cache")})
    fresh = out["fresh"]
    assert fresh["ok"] and fresh["registers"] > 7 and f"Used {fresh['registers']} registers" in out["kept"]
    reused = out["reused"]
    assert reused["registers"] == 7  # the kept summary's, so ptxas did not run again
    assert all(reused[k] == fresh[k] for k in SAME if k != "registers")  # the cubin and PTX are the cache's
    assert {k: out["recompiled"][k] for k in SAME} == {k: fresh[k] for k in SAME}
    assert f"Used {fresh['registers']} registers" in out["kept_again"]  # kept again, by the new compile
