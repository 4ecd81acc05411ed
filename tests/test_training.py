"""The training modes through the harness: every trainable implementation's backward and full
step on the tiny grid passes the float64 gradient check; wrong gradients are caught; what
cannot train (fused_mlp at this commit, cuBLASLt's epilogue, Liger's kernels on the CPU) skips
with its reason."""

import types

import pytest
import torch

from benchmarks import bench_training, common
from benchmarks.harness import fp8, implementations, liger, training
from workload.grids import BENCH_ENV, grid, training_grid
from benchmarks.harness.ops import op_spec
from benchmarks.harness.references import mismatch, reference
from benchmarks.harness.tensors import make_inputs, torch_dtype
from workload.case import Case

TINY = [case for cases in grid("tiny").values() for case in cases if not fp8.is_fp8(case.dtype)]  # FP8: inference only
TORCH_SIDE = ("eager", "compile", "compile_max_autotune")


@pytest.fixture(autouse=True)
def _fresh_graphs():
    yield
    implementations.reset_compiled()


@pytest.mark.parametrize("impl", TORCH_SIDE)
@pytest.mark.parametrize("case", TINY, ids=lambda c: c.op)
def test_torch_implementations_run_every_mode_and_pass_the_checks(case, impl, device):
    for mode in training.MODES:
        assert implementations.unavailable_reason(case, impl, device, mode) is None
        inputs = make_inputs(case, device)
        call = implementations.prepare(case, impl, inputs, mode)
        if mode == "forward":
            with torch.inference_mode():
                assert mismatch(call(), reference(case, inputs), torch_dtype(case)) is None
            continue
        assert isinstance(call, training.Step)
        assert training.gradient_mismatch(case, call, inputs) is None, (impl, mode)
        times = training.step_samples(call, device, samples=2, warmup=1)
        assert len(times) == 2 and all(t > 0 for t in times)


class _ScaledGrad(torch.autograd.Function):
    """Identity forward; the backward scales the gradient: a kernel with a wrong derivative."""

    @staticmethod
    def forward(ctx, t):
        return t.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 1.01


LINEAR = Case("linear_act", 16, 32, 48, "fp32", "gelu", bias=True)


def _step_of(forward_fn, case=LINEAR, mode="full"):
    inputs = make_inputs(case)
    tensors = training.require_grad(inputs)
    return training.prepare_step(case, lambda: forward_fn(**inputs), tensors, mode), inputs


@pytest.mark.parametrize("mode", training.TRAINING_MODES)
def test_a_wrong_gradient_is_named(mode):
    eager = op_spec("linear_act").eager
    step, inputs = _step_of(lambda x, **kw: eager(_ScaledGrad.apply(x), **kw), mode=mode)
    problem = training.gradient_mismatch(LINEAR, step, inputs)
    assert problem.startswith("gradient of x: relative error")
    step, inputs = _step_of(lambda x, weight, bias, activation: eager(x, weight, _ScaledGrad.apply(bias), activation))
    assert training.gradient_mismatch(LINEAR, step, inputs).startswith("gradient of bias:")


def test_an_input_left_out_of_the_graph_or_no_graph_at_all_is_no_gradient():
    eager = op_spec("linear_act").eager
    step, inputs = _step_of(lambda x, weight, bias, activation: eager(x, weight.detach(), bias, activation))
    assert training.gradient_mismatch(LINEAR, step, inputs).startswith("no gradient:")
    step, inputs = _step_of(lambda **kw: eager(**kw).detach())
    assert "no autograd graph" in training.gradient_mismatch(LINEAR, step, inputs)


def test_the_backward_mode_times_only_the_backward():
    calls = []
    eager = op_spec("linear_act").eager
    step, _ = _step_of(lambda **kw: calls.append("forward") or eager(**kw), mode="backward")
    state = step.before()
    assert calls == ["forward"]
    step.timed(state)
    assert calls == ["forward"]  # the timed half ran the backward alone
    full, _ = _step_of(lambda **kw: calls.append("forward") or eager(**kw), mode="full")
    full.timed(full.before())
    assert calls == ["forward", "forward"]


def test_modes_are_checked():
    with pytest.raises(ValueError, match="mode='sideways'"):
        implementations.prepare(LINEAR, "eager", make_inputs(LINEAR), "sideways")
    with pytest.raises(ValueError, match="mode='sideways'"):
        implementations.unavailable_reason(LINEAR, "eager", "cpu", "sideways")


def test_a_library_without_backward_skips_training_with_the_reason(monkeypatch, device):
    """A commit whose fused op refuses tensors that require grad (as fused_mlp did before its
    backward kernels) skips backward and full with the library's own words, and still runs forward."""
    def forward_only(x, *args, **kwargs):
        if x.requires_grad:
            raise ValueError("fused_mlp is forward-only: x requires grad")
        return op_spec("linear_act").eager(x, *args, **kwargs)

    monkeypatch.setattr(implementations, "library", lambda: types.SimpleNamespace(linear_act=forward_only))
    implementations.fused_backward_missing.cache_clear()
    case = next(c for c in TINY if c.op == "linear_act")
    try:
        assert implementations.unavailable_reason(case, "fused", device) is None
        for mode in training.TRAINING_MODES:
            reason = implementations.unavailable_reason(case, "fused", device, mode)
            assert reason == "fused_mlp at this commit has no backward (fused_mlp is forward-only: x requires grad)"
    finally:
        implementations.fused_backward_missing.cache_clear()


def test_fused_linear_act_trains_at_this_commit_and_its_gradients_check(device):
    implementations.fused_backward_missing.cache_clear()
    case = next(c for c in TINY if c.op == "linear_act")
    for mode in training.TRAINING_MODES:
        assert implementations.unavailable_reason(case, "fused", device, mode) is None
    inputs = make_inputs(case, device)
    step = implementations.prepare(case, "fused", inputs, "full")
    assert training.gradient_mismatch(case, step, inputs) is None


def test_a_library_that_trains_is_measured_with_no_edit(monkeypatch, device):
    """A commit whose public op accepts tensors that require grad is timed and its gradients
    checked: here a stand-in library whose linear_act is the eager code."""
    trains = types.SimpleNamespace(linear_act=op_spec("linear_act").eager)
    monkeypatch.setattr(implementations, "library", lambda: trains)
    implementations.fused_backward_missing.cache_clear()
    case = TINY[0]
    assert implementations.unavailable_reason(case, "fused", device, "full") is None
    inputs = make_inputs(case, device)
    step = implementations.prepare(case, "fused", inputs, "full")
    assert training.gradient_mismatch(case, step, inputs) is None


def test_a_narrow_mlp_that_trains_is_called_unpacked_in_training(monkeypatch, device):
    """The forward mode packs the layers once (as a deployment does at load time); a training
    step packs inside the call (the weights change every step). A stand-in library whose packing
    builds an autograd graph shows why: packed once, the second step could not backpropagate."""
    eager = op_spec("narrow_mlp").eager
    packs = []

    def pack_layers(weights, biases):
        packs.append(1)
        return types.SimpleNamespace(widths=None, weights=[w * 1.0 for w in weights], biases=[b * 1.0 for b in biases])

    def narrow_mlp_packed(x, packed, activation, output_activation=None):
        return eager(x, packed.weights, packed.biases, activation, output_activation)

    library = types.SimpleNamespace(narrow_mlp=lambda x, weights, biases=None, activation="relu",
                                    output_activation=None: narrow_mlp_packed(
                                        x, pack_layers(weights, biases), activation, output_activation),
                                    pack_layers=pack_layers, narrow_mlp_packed=narrow_mlp_packed)
    monkeypatch.setattr(implementations, "library", lambda: library)
    implementations.fused_backward_missing.cache_clear()
    case = next(c for c in TINY if c.op == "narrow_mlp")
    try:
        inputs = make_inputs(case, device)
        forward = implementations.prepare(case, "fused", inputs)
        forward(), forward()
        assert len(packs) == 1  # forward: packed once, at prepare time
        inputs = make_inputs(case, device)
        step = implementations.prepare(case, "fused", inputs, "full")
        assert training.gradient_mismatch(case, step, inputs) is None
        assert training.gradient_mismatch(case, step, inputs) is None  # a second step backpropagates too
        assert len(packs) == 3
    finally:
        implementations.fused_backward_missing.cache_clear()


def test_cublaslt_trains_only_where_torch_differentiates_its_epilogue():
    case = Case("linear_act", 4, 8, 16, "bf16", "relu", bias=True)
    assert implementations.unavailable_reason(case, "cublaslt", "cuda") is None
    reason = implementations.unavailable_reason(case, "cublaslt", "cuda", "backward")
    try:
        b, x = torch.zeros(2, requires_grad=True), torch.ones(1, 2, requires_grad=True)
        torch.autograd.grad(torch._addmm_activation(b, x, torch.ones(2, 2)).sum(), (x, b))
        assert reason is None
    except RuntimeError:
        assert "_addmm_activation" in reason


GATED = Case("gated_mlp", 16, 32, 64, "bf16", "silu")


@pytest.mark.parametrize("impl", ["liger_mlp", "liger_glu"])
def test_liger_peers_are_listed_for_the_gated_ops_only(impl):
    assert impl in implementations.names("gated_mlp") and impl in implementations.names("gated_up")
    assert impl not in implementations.names("linear_act")


def test_liger_refuses_what_it_does_not_take_with_the_reason():
    gelu_tanh = Case("gated_mlp", 16, 32, 64, "bf16", "gelu_tanh")
    assert "SwiGLU only" in implementations.unavailable_reason(gelu_tanh, "liger_mlp", "cuda")
    assert "gelu" in implementations.unavailable_reason(Case("gated_mlp", 16, 32, 64, "bf16", "gelu"), "liger_glu", "cuda")
    misaligned = Case("gated_mlp", 16, 36, 64, "fp16", "silu")  # 36 x 2 bytes: not a multiple of 16
    assert "16-byte aligned" in implementations.unavailable_reason(misaligned, "liger_mlp", "cuda")
    assert "needs CUDA" in implementations.unavailable_reason(GATED, "liger_mlp", "cpu")
    wide = Case("gated_mlp", 16, 32, 70000, "bf16", "silu")
    assert "65536" in implementations.unavailable_reason(wide, "liger_glu", "cuda")
    up = Case("gated_up", 16, 32, 64, "bf16", "silu")
    assert implementations.unavailable_reason(up, "liger_mlp", "cuda", "backward").startswith("liger_mlp:")


def test_liger_not_installed_is_a_skip(monkeypatch):
    monkeypatch.setattr(liger, "not_installed", lambda: "liger-kernel is not installed (pip install '.[peers]')")
    for impl in ("liger_mlp", "liger_glu"):
        assert "not installed" in implementations.unavailable_reason(GATED, impl, "cuda")


def test_liger_glu_on_the_cpu_runs_or_says_why(device, monkeypatch, request):
    """Liger's elementwise kernels under Triton's CPU interpreter: Triton 3.9's interpreter
    rejects them (a Python float has no .to; libdevice tanh), and the reason says so; where
    they run, the gradients must pass. Either way Liger's own kernel was called for each
    activation (a refusal that never tried it would hide a peer that works)."""
    if liger.not_installed():
        pytest.skip(liger.not_installed())
    called = []
    real = liger._glu_function
    monkeypatch.setattr(liger, "_glu_function", lambda activation: called.append(activation) or real(activation))
    liger._interpreter_failure.cache_clear()  # the probe runs again, through the spy
    request.addfinalizer(liger._interpreter_failure.cache_clear)  # later callers probe without it
    for activation in liger.GLU_FUNCTIONS:
        case = Case("gated_mlp", 8, 32, 64, "fp32", activation)
        reason = implementations.unavailable_reason(case, "liger_glu", device, "full")
        if reason:
            assert device != "cuda", reason
            assert "does not run under Triton's CPU interpreter (" in reason and activation in called, reason
            continue
        inputs = make_inputs(case, device)
        step = implementations.prepare(case, "liger_glu", inputs, "full")
        assert training.gradient_mismatch(case, step, inputs) is None
        assert activation in called
    assert set(called) == set(liger.GLU_FUNCTIONS)


class _TorchSiLUMul(torch.autograd.Function):
    """Stand-in for LigerSiLUMulFunction with its call convention: apply(gate, up)."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return torch.nn.functional.silu(gate) * up

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        sig = torch.sigmoid(gate)
        return grad * up * sig * (1 + gate * (1 - sig)), grad * gate * sig


def test_liger_glu_adapter_wires_the_gemms_and_the_gradients(monkeypatch):
    """The adapter's own part (which tensor goes where, the down GEMM) with Liger's kernel
    replaced by a torch function of the same convention: the kernels need CUDA, the wiring
    does not."""
    monkeypatch.setattr(liger, "_glu_function", lambda activation: _TorchSiLUMul)
    case = Case("gated_mlp", 8, 32, 64, "fp32", "silu")
    inputs = make_inputs(case)
    assert mismatch(liger.glu_gated_mlp(**inputs), reference(case, inputs), torch.float32) is None
    step = training.prepare_step(case, lambda: liger.glu_gated_mlp(**inputs), training.require_grad(inputs), "full")
    assert training.gradient_mismatch(case, step, inputs) is None
    with pytest.raises(ValueError, match="only"):
        liger.glu(inputs["x"], inputs["x"], "relu")


class _TorchMLP(torch.autograd.Function):
    """Stand-in for LigerMLPFunction with its call convention: apply(x[B, S, dim], Wg, Wu, Wd)."""

    @staticmethod
    def forward(ctx, x, w_gate, w_up, w_down):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (x, w_gate, w_up, w_down)]
            out = op_spec("gated_mlp").eager(*leaves, activation="silu")
        ctx.graph = (leaves, out)
        return out.detach()

    @staticmethod
    def backward(ctx, grad):
        leaves, out = ctx.graph
        return torch.autograd.grad(out, leaves, grad)


def _torch_gemm_swiglu(x, w_gate, w_up, gate_multiplier, store_preact=True):
    """Stand-in for liger_kernel.ops.mlp.gemm_swiglu's inference path: (silu(x Wg^T) * x Wu^T, None)."""
    assert gate_multiplier == 1.0 and store_preact is False and x.dim() == 3
    return op_spec("gated_up").eager(x, w_gate, w_up, activation="silu"), None


@pytest.mark.skipif(bool(liger.not_installed()), reason="liger-kernel is not installed (.[peers])")
def test_liger_mlp_adapters_wire_the_call_and_the_gradients(monkeypatch):
    """liger_mlp's adapters (the [B, S, dim] view Liger wants, which weight goes where) with
    Liger's CUDA-only functions replaced by torch stand-ins of the same convention."""
    import liger_kernel.ops.mlp as liger_mlp

    monkeypatch.setattr(liger_mlp, "LigerMLPFunction", _TorchMLP)
    monkeypatch.setattr(liger_mlp, "gemm_swiglu", _torch_gemm_swiglu)
    mlp = Case("gated_mlp", 8, 32, 64, "fp32", "silu")
    inputs = make_inputs(mlp)
    assert mismatch(liger.mlp_gated_mlp(**inputs), reference(mlp, inputs), torch.float32) is None
    step = training.prepare_step(mlp, lambda: liger.mlp_gated_mlp(**inputs), training.require_grad(inputs), "full")
    assert training.gradient_mismatch(mlp, step, inputs) is None
    up = Case("gated_up", 8, 32, 64, "fp32", "silu")
    inputs = make_inputs(up)
    assert mismatch(liger.mlp_gated_up(**inputs), reference(up, inputs), torch.float32) is None
    with pytest.raises(ValueError, match="SwiGLU only"):
        liger.mlp_gated_mlp(**{**make_inputs(mlp), "activation": "gelu_tanh"})


def test_liger_mlp_on_the_cpu_skips_saying_why(device):
    if device != "cpu":
        pytest.skip("the CPU's reason")
    if liger.not_installed():
        pytest.skip(liger.not_installed())  # the not-installed reason: test_liger_not_installed_is_a_skip
    reason = implementations.unavailable_reason(GATED, "liger_mlp", device, "full")
    assert "asserts CUDA tensors" in reason and "interpreter" in reason


def test_reference_gradients_match_autograd_of_eager_in_float64():
    case = Case.from_widths("narrow_mlp", 8, (16, 32, 8), "fp32", "relu")
    inputs = make_inputs(case)
    grad_out = training.upstream_gradient(case, "cpu")
    ref = training.reference_gradients(case, inputs, grad_out)
    assert list(ref) == ["x", "weights[0]", "weights[1]", "biases[0]", "biases[1]"]
    wide = {k: ([t.double().requires_grad_() for t in v] if isinstance(v, list) else
                v.double().requires_grad_() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    out = op_spec("narrow_mlp").eager(**wide)
    grads = torch.autograd.grad(out, list(training.named_tensors(wide).values()), grad_out.double())
    for (name, r), g in zip(ref.items(), grads):
        torch.testing.assert_close(r, g, msg=name)


TINY_TRAINING = {op: cases[0].key for op, cases in training_grid("tiny").items()}


class TestTrainingMeasuringPass:
    """bench_training's classes on the one measuring pass bench_ops uses (common._CaseBenchmark)."""

    def test_every_class_is_the_ops_training_grid_times_every_implementation_and_mode(self):
        for cls in (bench_training.LinearActTraining, bench_training.GatedMLPTraining,
                    bench_training.NarrowMLPTraining):
            assert cls.param_names == ["case", "impl", "mode"]
            assert cls.params == ([c.key for c in training_grid(common.grid_name())[cls.op]], implementations.names(cls.op),
                                  ["backward", "full"])
            assert issubclass(cls, common._CaseBenchmark) and cls.setup is common._CaseBenchmark.setup

    @pytest.mark.parametrize("mode", training.TRAINING_MODES)
    def test_one_pass_checks_the_gradients_then_serves_every_metric(self, tmp_path, monkeypatch, mode):
        key = TINY_TRAINING["gated_mlp"]
        checked = []
        real = training.gradients_problem
        monkeypatch.setattr(training, "gradients_problem", lambda *a: checked.append(a) or real(*a))
        # only this combination (the first process of a case also files the run's other selected
        # implementations, common._measure_siblings)
        monkeypatch.setenv(BENCH_ENV, r"GatedMLPTraining\.track_\w+\(.*'eager'")
        bench = bench_training.GatedMLPTraining()
        bench.setup(str(tmp_path), key, "eager", mode)
        out = bench.track_latency(str(tmp_path), key, "eager", mode)
        assert len(checked) == 1 and out["number"] == 1 and len(out["samples"]) == bench.samples
        with pytest.raises(NotImplementedError, match="CUDA allocator"):
            bench.track_peak_memory(str(tmp_path), key, "eager", mode)
        monkeypatch.setattr(common._CaseBenchmark, "_measure", lambda *a: pytest.fail("measured twice"))
        again = bench_training.GatedMLPTraining()  # another metric's process reads what was filed
        again.setup(str(tmp_path), key, "eager", mode)
        assert again.track_latency(str(tmp_path), key, "eager", mode) == out

    def test_the_backward_mode_samples_only_the_backward(self, monkeypatch):
        """The forward of the backward mode runs before every sample, outside the timed region."""
        timed = []
        real = training.Step.timed
        monkeypatch.setattr(training.Step, "timed", lambda self, state: timed.append(state is not None)
                            or real(self, state))
        filed = bench_training.LinearActTraining().measure_all(TINY_TRAINING["linear_act"], "eager", "backward")
        assert "metrics" in filed and timed and all(timed)

    @pytest.mark.parametrize("mode", training.TRAINING_MODES)
    def test_a_wrong_gradient_fails_every_metric_before_timing(self, tmp_path, mode):
        class WrongGradient(bench_training.LinearActTraining):
            def prepared_call(self, case, impl, inputs, mode):
                step = super().prepared_call(case, impl, inputs, mode)
                real = step.forward
                step.forward = lambda: real() * 1.01  # the forward is wrong: so is every gradient
                return step

        key = TINY_TRAINING["linear_act"]
        filed = WrongGradient().measure_all(key, "eager", mode)
        assert "metrics" not in filed
        assert f"computes a wrong result for {key} ({mode}): gradient of x: relative error" in filed["failed"]
        with pytest.raises(AssertionError, match="wrong result"):
            WrongGradient().setup(str(tmp_path), key, "eager", mode)

    def test_what_cannot_train_skips_with_the_reason(self, tmp_path, monkeypatch):
        forward_only = types.SimpleNamespace(linear_act=lambda x, *a, **k: (_ for _ in ()).throw(
            ValueError("fused_mlp is forward-only")) if x.requires_grad else op_spec("linear_act").eager(x, *a, **k))
        monkeypatch.setattr(implementations, "library", lambda: forward_only)
        implementations.fused_backward_missing.cache_clear()
        key = TINY_TRAINING["linear_act"]
        try:
            for impl, reason in (("fused", "fused_mlp at this commit has no backward (fused_mlp is forward-only)"),
                                 ("cublaslt", "cublaslt needs a CUDA device")):
                assert bench_training.LinearActTraining().measure_all(key, impl, "full") == {"skip": reason}
                with pytest.raises(NotImplementedError, match="no backward|CUDA"):
                    bench_training.LinearActTraining().setup(str(tmp_path), key, impl, "full")
        finally:
            implementations.fused_backward_missing.cache_clear()

    def test_a_training_call_too_large_for_the_cpu_skips(self):
        big = training_grid("default")["gated_mlp"][0].key
        assert "too large for a CPU run" in bench_training.GatedMLPTraining().measure_all(big, "eager", "full")["skip"]
