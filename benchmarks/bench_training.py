"""The training modes, per op: `backward` (the backward pass alone, for a fixed upstream
gradient, after an untimed forward) and `full` (forward + backward), with the peak memory of
each. The forward mode is bench_ops' classes, whose names and numbers stay as they were.

asv names them bench_training.<Class>.<metric> with params (case, impl, mode). Every gradient is
checked against a float64 autograd reference before anything is timed; an implementation that
cannot train (fused_mlp before its backward, cuBLASLt's epilogue, a peer not installed) skips
with the reason. The logic lives in harness/training_case.py; these classes only bind it to asv.
"""

from .common import _CaseBenchmark, grid_name
from .harness import implementations, training, training_case  # modules: asv takes track_* names
from .harness.grids import training_grid


def _params(op: str):
    return [c.key for c in training_grid(grid_name())[op]], implementations.names(op), list(training.TRAINING_MODES)


class _TrainingBenchmark(_CaseBenchmark):
    """params = (case key, implementation, mode); subclasses set `op` and `params`. The metrics
    come from _CaseBenchmark's one measuring pass per combination, which calls measure_metrics.

    track_peak_memory here: for `backward` the backward's own peak, for `full` the activations
    saved for backward plus it (training.peak_memory)."""

    param_names = ["case", "impl", "mode"]
    timeout = 1800  # cold max-autotune of a training graph tunes every forward and backward GEMM
    # A step is three forwards' work (milliseconds at the grid's sizes): 50 samples after 10
    # warm-up steps settle its median, at half the GPU time of the forward's 100 + 25.
    samples = 50
    warmup = 10

    def prepared_step(self, case, impl, inputs, mode):
        """The Step to measure (a hook: the suite's own tests plant a wrong one)."""
        return implementations.prepare(case, impl, inputs, mode)

    def measure_metrics(self, case, impl, device, mode):
        step = training_case.set_up(case, impl, mode, device, self.prepared_step)
        interpreted = impl == implementations.FUSED and device == "cpu"
        samples, warmup = (self.interpreter_samples, 1) if interpreted else (self.samples, self.warmup)
        metrics = {"latency": training_case.latency(step, device, samples, warmup)}
        if device != "cuda":
            metrics["peak_memory"] = {"skip": "peak memory is read from the CUDA allocator"}
            metrics["kernels_per_call"] = {"skip": "device kernels are counted on CUDA"}
            return metrics
        metrics["peak_memory"] = training.peak_memory(step)
        metrics["kernels_per_call"] = training_case.kernels(step)  # torch.profiler: last
        return metrics


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
