"""The two halves of each op: what it is (workload.ops) and its code (benchmarks.harness.ops)."""

import importlib
import sys

import pytest

from benchmarks.harness import ops as with_code
from workload import ops as described


def test_every_described_op_has_its_code_and_the_same_facts():
    assert list(with_code.OPS) == list(described.OPS) == ["linear_act", "gated_up", "gated_mlp", "narrow_mlp"]
    for name, spec in with_code.OPS.items():
        assert isinstance(spec, type(described.OPS[name]))  # the code subclasses the description
        assert list(spec.peers) == list(spec.peer_names)


def test_code_for_a_missing_op_or_peer_is_refused():
    ops = dict(with_code.OPS)
    with pytest.raises(ValueError, match=r"are not the ops described"):
        with_code.check_code_matches({k: v for k, v in ops.items() if k != "gated_up"}, described.OPS)

    class NoCublaslt(type(ops["linear_act"])):
        peers = {k: v for k, v in ops["linear_act"].peers.items() if k != "cublaslt"}

    with pytest.raises(ValueError, match=r"linear_act's peers .* are not its peer_names"):
        with_code.check_code_matches({**ops, "linear_act": NoCublaslt()}, described.OPS)
    assert with_code.check_code_matches(ops, described.OPS) == ops


def test_a_module_with_no_op_or_a_misnamed_one_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "planted_ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "linear_act.py").write_text("OP = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TypeError, match=r"planted_ops.linear_act defines no OP = <OpSpec subclass>"):
        described.discover("planted_ops", [str(package)], described.OpSpec)
    (package / "linear_act.py").write_text("from workload.ops.gated_up import OP\n")
    sys.modules.pop("planted_ops.linear_act", None)
    importlib.invalidate_caches()
    with pytest.raises(ValueError, match=r"describes op 'gated_up'; name the module after its op"):
        described.discover("planted_ops", [str(package)], described.OpSpec)


def test_implementation_names_need_no_torch_and_match_the_suite_s():
    from benchmarks.harness import implementations

    for op in described.OPS:
        assert described.implementation_names(op) == implementations.names(op)
    assert described.implementation_names("linear_act")[:4] == ["fused", "eager", "compile", "compile_max_autotune"]
