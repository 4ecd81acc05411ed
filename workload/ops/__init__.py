"""The ops the suite measures, torch-free: one module each, holding one `OP = <OpSpec subclass>()`.

An op's module says what the op is: its inputs, flops and minimum bytes, its grid cases and the
names of its peers. Its code (float64 reference, eager code, the peers' calls) is the module of
the same name in benchmarks/harness/ops/, a subclass of this one. To add an op, write its kernel
in fused_mlp (a public function named like the op), one module here and its code there; Case,
cost, grids, the asv classes, the implementations and the dashboard all read these registries.
"""

from __future__ import annotations

import importlib
import pkgutil

from workload.ops._spec import OpSpec, RandomTensor

FUSED, EAGER, COMPILE, COMPILE_MAX_AUTOTUNE = "fused", "eager", "compile", "compile_max_autotune"


def discover(package: str, path, kind: type) -> dict[str, OpSpec]:
    """Every `OP` of the modules of `package` (not those named _*), each an instance of `kind`
    and named after its module, in their listing order."""
    specs = []
    for info in pkgutil.iter_modules(path):
        if info.name.startswith("_"):
            continue
        spec = getattr(importlib.import_module(f"{package}.{info.name}"), "OP", None)
        if not isinstance(spec, kind):
            raise TypeError(f"{package}.{info.name} defines no OP = <{kind.__name__} subclass>()")
        if spec.name != info.name:
            raise ValueError(f"{package}.{info.name} describes op {spec.name!r}; name the module after its op")
        specs.append(spec)
    return {s.name: s for s in sorted(specs, key=lambda s: (s.order, s.name))}


class Registry:
    """Ops by name: the lookups everyone uses to go from a name or a Case to what its op is."""

    def __init__(self, specs: dict[str, OpSpec]):
        self.specs = specs

    def op_spec(self, name: str) -> OpSpec:
        """The OpSpec of op `name`, or a ValueError that lists the ops."""
        if name not in self.specs:
            raise ValueError(f"op={name!r} is not known; expected one of {list(self.specs)}")
        return self.specs[name]

    def spec_of(self, case) -> OpSpec:
        """The OpSpec of `case`'s op, once the Case is checked against it (a ValueError that
        names the problem otherwise)."""
        spec = self.op_spec(case.op)
        spec.check_case(case)
        return spec

    def output_features(self, case) -> int:
        """Features of `case`'s output (the hidden width's way back for gated_mlp, the last
        width of a layered op)."""
        return self.spec_of(case).output_features(case)


OPS: dict[str, OpSpec] = discover(__name__, __path__, OpSpec)
_REGISTRY = Registry(OPS)
op_spec, spec_of, output_features = _REGISTRY.op_spec, _REGISTRY.spec_of, _REGISTRY.output_features


def implementation_names(op: str) -> list[str]:
    """The implementations of `op`, fused first: fused, eager, the two torch.compile modes, then
    its peers."""
    return [FUSED, EAGER, COMPILE, COMPILE_MAX_AUTOTUNE, *op_spec(op).peer_names]


__all__ = ["COMPILE", "COMPILE_MAX_AUTOTUNE", "EAGER", "FUSED", "OPS", "OpSpec", "RandomTensor", "Registry",
           "discover", "implementation_names", "op_spec", "output_features", "spec_of"]
