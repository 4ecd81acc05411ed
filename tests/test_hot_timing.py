"""Hot latency (benchmarks/harness/hot_timing.py, benchmarks/bench_hot.py) on the CPU: the
sequence of CUDA calls against a fake torch.cuda (only that boundary is faked), the per-call
arithmetic, the argument checks, the skips without CUDA, which classes a grid defines, and the
one measuring pass that serves both metrics."""

import os

import pytest

from benchmarks.harness import hot_timing


class FakeCuda:
    """Records what hot_timing asks of torch.cuda; events report 1 ms per replay."""

    def __init__(self, available=True):
        self.log = []
        self.available = available
        self.capturing = False

    def is_available(self):
        return self.available

    def synchronize(self):
        self.log.append("sync")

    def current_stream(self):
        return FakeStream(self, "main")

    def Stream(self):
        return FakeStream(self, "side")

    def stream(self, s):
        return _Context(self, f"on {s.name}", "off side")

    def CUDAGraph(self):
        return FakeGraph(self)

    def graph(self, g):
        return _Capture(self, g)

    def Event(self, enable_timing):
        return FakeEvent(self)


class _Context:
    def __init__(self, cuda, enter, leave):
        self.cuda, self.enter, self.leave = cuda, enter, leave

    def __enter__(self):
        self.cuda.log.append(self.enter)

    def __exit__(self, *exc):
        self.cuda.log.append(self.leave)


class _Capture(_Context):
    def __init__(self, cuda, graph):
        super().__init__(cuda, "capture", "end capture")
        self.graph = graph

    def __enter__(self):
        super().__enter__()
        self.cuda.capturing = True

    def __exit__(self, *exc):
        self.cuda.capturing = False
        super().__exit__(*exc)


class FakeStream:
    def __init__(self, cuda, name):
        self.cuda, self.name = cuda, name

    def wait_stream(self, other):
        self.cuda.log.append(f"{self.name} waits {other.name}")


class FakeGraph:
    def __init__(self, cuda):
        self.cuda = cuda

    def replay(self):
        self.cuda.log.append("replay")
        self.cuda.clock += 1e-3


class FakeEvent:
    def __init__(self, cuda):
        self.cuda = cuda

    def record(self):
        self.at = self.cuda.clock

    def elapsed_time(self, end):
        return (end.at - self.at) * 1e3  # milliseconds, as CUDA events report


def test_graph_replay_captures_after_a_side_stream_warm_up_and_divides_each_replay_by_its_calls():
    cuda = FakeCuda()
    cuda.clock = 0.0
    calls = []
    got = hot_timing.graph_replay_samples(lambda: calls.append(cuda.capturing), calls=4, samples=3, warmup=2,
                                          cuda=cuda)
    assert got == pytest.approx([1e-3 / 4] * 3)
    assert calls == [False, False, True, True, True, True]  # warm-up outside the capture, then 4 captured
    log = cuda.log
    assert log.index("on side") < log.index("off side") < log.index("capture") < log.index("end capture")
    assert log.count("replay") == 1 + 3  # one upload replay, then one per sample


def test_launch_overhead_is_host_time_per_call_with_the_device_drained_outside_the_timing():
    cuda = FakeCuda()
    ticks = iter(range(100))
    calls = []
    got = hot_timing.launch_overhead_samples(lambda: calls.append(1), calls=5, samples=2, warmup=1, cuda=cuda,
                                             clock=lambda: next(ticks) * 10.0)
    assert got == [2.0, 2.0]  # each burst: two clock reads 10 s apart, over 5 calls
    assert len(calls) == 1 + 2 * 5 and cuda.log == ["sync", "sync", "sync"]


@pytest.mark.parametrize("kwargs, said", [({"calls": 0}, "calls=0"), ({"samples": 0}, "samples=0"),
                                          ({"warmup": -1}, "warmup=-1"), ({"calls": 1000}, "at most"),
                                          ({"calls": 2.5}, "calls=2.5")])
def test_bad_counts_are_refused_by_name(kwargs, said):
    with pytest.raises(ValueError, match=said):
        hot_timing.graph_replay_samples(lambda: None, cuda=FakeCuda(), **kwargs)


def test_without_cuda_both_say_why():
    for fn in (hot_timing.graph_replay_samples, hot_timing.launch_overhead_samples):
        with pytest.raises(hot_timing.NoCUDA, match="needs a CUDA device"):
            fn(lambda: None, cuda=FakeCuda(available=False))


@pytest.fixture
def bench_hot_on(suite_module_on_grid):
    """bench_hot as asv imports it for a grid; the session's grid's module again afterwards."""
    import benchmarks.bench_hot as bench_hot

    return lambda grid_name: suite_module_on_grid(bench_hot, grid_name)


def test_a_grid_s_classes_time_its_decode_cases_fused_and_eager(bench_hot_on):
    bench_hot = bench_hot_on("quick")
    assert "LinearActHot" in bench_hot.HOT_CLASSES
    for name in {"LinearActHot", "GatedMLPHot", "NarrowMLPHot"} - set(bench_hot.HOT_CLASSES):
        assert not hasattr(bench_hot, name)  # no decode case in this grid: no class for asv to list
    cls = bench_hot.LinearActHot
    cases, impls = cls.params
    assert cases and all(" M=16 " in c or " M=1 " in c for c in cases) and impls == ["fused", "eager"]
    assert cls.metrics == ("graph_latency", "launch_overhead")
    for metric in ("track_graph_latency", "track_launch_overhead"):
        assert getattr(cls, metric).unit == "seconds"
    assert not [m for m in dir(cls) if m.startswith(("track_", "time_")) and m[6:] not in cls.metrics]


def test_the_smoke_grid_lists_every_op_and_skips_each_combination_with_the_reason(bench_hot_on, tmp_path):
    from workload.grids import grid

    bench_hot = bench_hot_on("tiny")
    assert bench_hot.HOT_CLASSES == ["LinearActHot", "GatedMLPHot", "NarrowMLPHot"]
    cls = bench_hot.LinearActHot
    assert cls.params[0] == [grid("tiny")["linear_act"][0].key]  # no decode case there: its own stands in
    folder = str(tmp_path)
    with pytest.raises(NotImplementedError, match="needs a CUDA device"):  # this machine has none
        cls().setup(folder, cls.params[0][0], "fused")
    with pytest.raises(NotImplementedError, match="needs a CUDA device"):  # filed: the other metric reads it
        cls().setup(folder, cls.params[0][0], "fused")


def test_one_measuring_pass_serves_both_metrics(bench_hot_on, tmp_path, monkeypatch):
    """The eager call on the CPU stands in for the device's, and FakeCuda for torch.cuda: the
    real pass (inputs, first call, reference check, graph replay, launch bursts) runs once."""
    bench_hot = bench_hot_on("tiny")
    monkeypatch.chdir(tmp_path)  # asv's per-run cache folder: setup_cache files into the working directory
    cuda = FakeCuda()
    cuda.clock = 0.0
    monkeypatch.setattr(hot_timing, "_cuda", lambda _: cuda)
    monkeypatch.setattr(bench_hot._HotBenchmark, "measuring_device", lambda self: "cpu")
    passes = []
    real = bench_hot._HotBenchmark._measure
    monkeypatch.setattr(bench_hot._HotBenchmark, "_measure", lambda self, *a: passes.append(a[1]) or real(self, *a))

    class Small(bench_hot.LinearActHot):
        params = (bench_hot.LinearActHot.params[0], ["eager"])
        samples = 3

    folder = Small().setup_cache()
    key = Small.params[0][0]
    got = {}
    for metric in ("track_graph_latency", "track_launch_overhead"):  # each in a process of its own
        bench = Small()
        bench.setup(folder, key, "eager")
        got[metric] = getattr(bench, metric)(folder, key, "eager")
    assert passes == ["eager"]
    assert got["track_graph_latency"] == {"samples": pytest.approx([1e-3 / hot_timing.CALLS_PER_SAMPLE] * 3),
                                          "number": 1}
    launch = got["track_launch_overhead"]
    assert launch["number"] == 1 and len(launch["samples"]) == 3 and all(t > 0 for t in launch["samples"])
    assert cuda.log.count("replay") == 1 + 3


def test_a_wrong_result_fails_both_metrics_before_anything_is_timed(bench_hot_on, tmp_path, monkeypatch):
    bench_hot = bench_hot_on("tiny")
    monkeypatch.setattr(bench_hot._HotBenchmark, "measuring_device", lambda self: "cpu")
    monkeypatch.setattr(hot_timing, "_cuda", lambda _: pytest.fail("timed a wrong result"))

    class Wrong(bench_hot.LinearActHot):
        params = (bench_hot.LinearActHot.params[0], ["eager"])

        def prepared_call(self, case, impl, inputs):
            real = super().prepared_call(case, impl, inputs)
            return lambda: real() * 1.01

    key = Wrong.params[0][0]
    for _ in range(2):
        with pytest.raises(AssertionError, match="computes a wrong result"):
            Wrong().setup(str(tmp_path), key, "eager")
