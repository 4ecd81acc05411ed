"""The training modes, per op: `backward` (the backward pass alone, for a fixed upstream
gradient, after an untimed forward) and `full` (forward + backward), with the peak memory of
each. The forward mode is bench_ops' classes, whose names and numbers stay as they were.

asv names them bench_training.<Class>.<metric> with params (case, impl, mode). They run on the
same one-measuring-pass machinery as bench_ops (common._CaseBenchmark): the first metric of a
combination checks every gradient (of x, each weight and each bias) against a float64 autograd
reference, then measures latency, peak memory and kernels per call and files them for the other
metrics. A wrong gradient is a failure (asv records null), never a time; an implementation that
cannot train (a fused_mlp commit without the op's backward, cuBLASLt's epilogue where torch has
no formula, a peer not installed) skips with the reason.
"""

from benchmarks.common import _CaseBenchmark, grid_name
from benchmarks.harness import implementations, training  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark
from workload.grids import training_grid
from workload.modes import TRAINING_MODES


class _TrainingBenchmark(_CaseBenchmark):
    """params = (case key, implementation, mode); subclasses set `op` and `params`. The hooks
    make the measured call a training.Step: its gradients are the result checked, its timed half
    is what the samples time, and its peak memory is the training peak."""

    param_names = ["case", "impl", "mode"]
    timeout = 1800  # cold max-autotune of a training graph tunes every forward and backward GEMM
    # A step is three forwards' work (milliseconds at the grid's sizes): 50 samples after 10
    # warm-up steps settle its median, at half the GPU time of the forward's 100 + 25.
    samples = 50
    warmup = 10

    @classmethod
    def grid_params(cls, op: str):
        return ([case.key for case in training_grid(grid_name())[op]], implementations.names(op),
                list(TRAINING_MODES))

    def prepared_call(self, case, impl, inputs, mode):
        return implementations.prepare(case, impl, inputs, mode)

    def result_problem(self, case, inputs, grads, mode):
        # the Step's upstream gradient is training.upstream_gradient(case, device): fixed by its seed
        device = next(iter(training.named_tensors(inputs).values())).device
        return training.gradients_problem(case, inputs, training.upstream_gradient(case, device), grads)

    def latency_samples(self, step, device, samples, warmup):
        return training.step_samples(step, device, samples, warmup)

    def peak_memory(self, step):
        """backward: the backward's own peak; full: the activations saved for backward plus it."""
        return training.peak_memory(step)

    def kernels_per_call(self, step):
        return training.kernels_per_step(step)


class LinearActTraining(_TrainingBenchmark):
    """linear_act: act(x @ W.T + b) trained: its backward and forward + backward."""

    op = "linear_act"
    params = _TrainingBenchmark.grid_params(op)


class GatedMLPTraining(_TrainingBenchmark):
    """gated_mlp: the GeGLU/SwiGLU MLP trained, against LigerMLP and max-autotune."""

    op = "gated_mlp"
    params = _TrainingBenchmark.grid_params(op)


class NarrowMLPTraining(_TrainingBenchmark):
    """narrow_mlp: the narrow MLP trained (eager and compile run a GEMM per layer each way)."""

    op = "narrow_mlp"
    params = _TrainingBenchmark.grid_params(op)
