"""The ops with the suite's code: one module each, holding one `OP`, the op's OpSpec
(workload/ops/<op>.py) with its OpCode (reference, eager code, peers). The suite looks ops up
here; the dashboard, the cost model and the grids read workload.ops (no code, no torch).
"""

from __future__ import annotations

from benchmarks.harness.ops._spec import OpCode
from benchmarks.harness.peer import Peer
from workload import ops as shapes
from workload.ops import OpSpec, RandomTensor, Registry, discover


def check_code_matches(ops: dict[str, OpSpec], described: dict[str, OpSpec]) -> dict[str, OpSpec]:
    """`ops` when they are the ops `described` (workload.ops), each with code for exactly the
    peers its description names; a ValueError naming the difference otherwise."""
    if list(ops) != list(described):
        raise ValueError(f"ops with code {list(ops)} are not the ops described {list(described)}")
    for spec in ops.values():
        if list(spec.peers) != list(spec.peer_names):
            raise ValueError(f"{spec.name}'s peers {list(spec.peers)} are not its peer_names {list(spec.peer_names)}")
    return ops


OPS: dict[str, OpSpec] = check_code_matches(discover(__name__, __path__, OpCode), shapes.OPS)
_REGISTRY = Registry(OPS)
op_spec, spec_of, output_features = _REGISTRY.op_spec, _REGISTRY.spec_of, _REGISTRY.output_features

__all__ = ["OPS", "OpCode", "check_code_matches", "OpSpec", "Peer", "RandomTensor", "op_spec", "output_features", "spec_of"]
