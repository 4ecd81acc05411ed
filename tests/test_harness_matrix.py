"""tools/implementation_matrix.py: what runs, skips or fails, as the suite's measuring pass files it."""

import importlib.util

from benchmarks import bench_ops, bench_training
from tests.suite_run import ROOT

spec = importlib.util.spec_from_file_location("implementation_matrix", ROOT / "tools" / "implementation_matrix.py")
matrix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(matrix)

TINY_LINEAR = "linear_act M=64 K=128 N=256 fp32 gelu_tanh bias"


class _Forward(bench_ops.LinearAct):
    params = ([TINY_LINEAR], ["eager", "cublaslt"])


class _Training(bench_training.LinearActTraining):
    params = ([TINY_LINEAR], ["eager"], ["full"])


class _Wrong(bench_ops.LinearAct):
    params = ([TINY_LINEAR], ["eager"])

    def prepared_call(self, case, impl, inputs):
        real = super().prepared_call(case, impl, inputs)
        return lambda: real() * 1.01


def test_each_combination_is_a_run_a_skip_with_its_reason_or_a_failure():
    found = {(op, impl): cells for op, impl, cells in
             matrix.rows({"forward": [_Forward, _Wrong], "training": [_Training]})}
    assert found[("linear_act", "eager")]["full"].startswith("runs (")
    assert found[("linear_act", "cublaslt")]["forward"] == "skip: cublaslt needs a CUDA device"
    # _Wrong ran after _Forward for the same (op, impl): its failure is what the row shows
    assert found[("linear_act", "eager")]["forward"].startswith("FAIL: AssertionError: eager computes a wrong result")
    table = matrix.markdown([("linear_act", "eager", found[("linear_act", "eager")])])
    assert table.splitlines()[0] == "| op | implementation | forward | backward | full |"
    assert "| linear_act | eager | FAIL" in table and "| - |" in table  # no backward row was asked for
