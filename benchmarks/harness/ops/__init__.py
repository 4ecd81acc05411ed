"""The ops the suite measures: one module each, holding one `OP = <OpSpec subclass>()`.

An op's module says everything the harness needs: what it computes, its inputs, flops and
minimum bytes, its grid cases, its float64 reference, its eager code and any peers. To add an op,
write its kernel in fused_mlp (a public function named like the op) and one module here;
Case, cost, grids, the asv classes, the implementations and the dashboard all read this registry.
"""

from __future__ import annotations

import importlib
import pkgutil

from benchmarks.harness.ops._spec import OpSpec, Peer, RandomTensor


def _discover() -> dict[str, OpSpec]:
    specs = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "OP", None)
        if not isinstance(spec, OpSpec):
            raise TypeError(f"{__name__}.{info.name} defines no OP = <OpSpec subclass>()")
        if spec.name != info.name:
            raise ValueError(f"{__name__}.{info.name} describes op {spec.name!r}; name the module after its op")
        specs.append(spec)
    return {s.name: s for s in sorted(specs, key=lambda s: (s.order, s.name))}


OPS: dict[str, OpSpec] = _discover()


def op_spec(name: str) -> OpSpec:
    """The OpSpec of op `name`, or a ValueError that lists the ops."""
    if name not in OPS:
        raise ValueError(f"op={name!r} is not known; expected one of {list(OPS)}")
    return OPS[name]


def spec_of(case) -> OpSpec:
    """The OpSpec of `case`'s op, once the Case is checked against it (a ValueError that names
    the problem otherwise): how everyone goes from a Case to what its op is."""
    spec = op_spec(case.op)
    spec.check_case(case)
    return spec


def output_features(case) -> int:
    """Features of `case`'s output (the hidden width's way back for gated_mlp, the last width
    of a layered op)."""
    return spec_of(case).output_features(case)


__all__ = ["OPS", "OpSpec", "Peer", "RandomTensor", "op_spec", "output_features", "spec_of"]
