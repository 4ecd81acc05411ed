"""One asv class per op, timing every implementation over the op's Cases in the chosen grid:
LinearAct (fused vs eager, torch.compile, cuBLASLt's epilogue), GatedMLP (2 kernels vs eager's 5
and compile's 4), NarrowMLP (1 kernel vs a GEMM and an activation per layer).

The classes come from the op registry (`harness/ops/`), so a new op gets its class without an
edit here; asv names them bench_ops.<Class>.<metric>.
"""

from .common import _CaseBenchmark
from .harness.grids import benchmarked_ops
from .harness.ops import OPS

for _op in benchmarked_ops():
    _spec = OPS[_op]
    globals()[_spec.benchmark_class] = type(_spec.benchmark_class, (_CaseBenchmark,), {
        "__doc__": f"{_op}: {_spec.summary}, against its unfused peers.",
        "op": _op,
        "params": _CaseBenchmark.grid_params(_op),
    })
