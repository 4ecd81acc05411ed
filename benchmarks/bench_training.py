"""The training modes, per op: `backward` (the backward pass alone, for a fixed upstream
gradient, after an untimed forward) and `full` (forward + backward), with the peak memory of
each. The forward mode is bench_ops' classes, whose names and numbers stay as they were.

asv names them bench_training.<Class>.<metric> with params (case, impl, mode). Every gradient is
checked against a float64 autograd reference before anything is timed; an implementation that
cannot train (fused_mlp before its backward, cuBLASLt's epilogue, a peer not installed) skips
with the reason. The logic lives in harness/training_case.py; these classes only bind it to asv.
"""

import torch

from .common import _CaseBenchmark, grid_name, skip
from .harness import implementations, training, training_case  # modules: asv takes track_* names
from .harness.grids import training_grid
from .harness.workloads import Case


def _params(op: str):
    return [c.key for c in training_grid(grid_name())[op]], implementations.names(op), list(training.TRAINING_MODES)


class _TrainingBenchmark(_CaseBenchmark):
    """params = (case key, implementation, mode); subclasses set `op` and `params`."""

    param_names = ["case", "impl", "mode"]
    timeout = 1800  # cold max-autotune of a training graph tunes every forward and backward GEMM

    def setup(self, case_key: str, impl: str, mode: str):
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.step = training_case.set_up(Case.from_key(case_key), impl, mode, self.device, self.prepared_step)

    def prepared_step(self, case, impl, inputs, mode):
        """The Step to measure (a hook: the suite's own tests plant a wrong one)."""
        return implementations.prepare(case, impl, inputs, mode)

    def track_latency(self, case_key, impl, mode):
        interpreted = impl == implementations.FUSED and self.device == "cpu"
        samples, warmup = (self.interpreter_samples, 1) if interpreted else (self.samples, self.warmup)
        return training_case.latency(self.step, self.device, samples, warmup)

    track_latency.unit = "seconds"

    def track_peak_memory(self, case_key, impl, mode):
        """backward: the backward's own peak; full: the activations saved for backward plus it."""
        if self.device != "cuda":
            skip("peak memory is read from the CUDA allocator")
        return training.peak_memory(self.step)

    track_peak_memory.unit = "bytes"

    def track_kernels_per_call(self, case_key, impl, mode):
        if self.device != "cuda":
            skip("device kernels are counted on CUDA")
        return training_case.kernels(self.step)

    track_kernels_per_call.unit = "kernels"


class LinearActTraining(_TrainingBenchmark):
    """linear_act: act(x @ W.T + b) trained: its backward and forward + backward."""

    op = "linear_act"
    params = _params(op)


class GatedMLPTraining(_TrainingBenchmark):
    """gated_mlp: the GeGLU/SwiGLU MLP trained, against LigerMLP and max-autotune."""

    op = "gated_mlp"
    params = _params(op)


class NarrowMLPTraining(_TrainingBenchmark):
    """narrow_mlp: the narrow MLP trained (eager and compile run a GEMM per layer each way)."""

    op = "narrow_mlp"
    params = _params(op)
