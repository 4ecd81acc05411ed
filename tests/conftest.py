"""Test set-up: Triton's CPU interpreter runs the real kernels when there is no GPU.

TRITON_INTERPRET must be set before triton (and so fused_mlp) is imported: `@triton.jit`
chooses the interpreter when it decorates each kernel.
"""

import importlib
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

pytest_plugins = ["tests.planted_history"]  # its measured_history fixture: one measured history a session


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(autouse=True)
def _environment_restored():
    """Every test starts from the environment the session started with: code under test may set
    variables in this process (benchmarks.run selects its grid there), and a leak would make a
    later test's result depend on which tests ran before it in the same process, an order that
    differs from run to run under pytest-xdist."""
    before = dict(os.environ)
    yield
    if dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture
def suite_module_on_grid():
    """A benchmarks module as asv imports it for a grid (bench_hot and bench_training read
    $FUSED_MLP_GRID at import, into their classes' params); afterwards each module reloaded under
    the session's own environment, so no later test in this worker sees another grid's classes."""
    from workload.grids import GRID_ENV

    was = os.environ.get(GRID_ENV)
    reloaded = []

    def on(module, grid_name):
        os.environ[GRID_ENV] = grid_name
        reloaded.append(module)
        return importlib.reload(module)

    yield on
    if was is None:
        os.environ.pop(GRID_ENV, None)
    else:
        os.environ[GRID_ENV] = was
    for module in reloaded:
        importlib.reload(module)


@pytest.fixture
def poisoned_empty(monkeypatch):
    """Make every torch.empty during the test NaN-filled, so an output element a kernel forgets
    to write shows up as NaN and fails the comparison."""
    real_empty = torch.empty

    def empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", empty)
    return empty


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown where it is not installed
def pytest_xdist_make_scheduler(config, log):
    """`-n logical --dist loadfile` (CI's command): xdist's file scheduling, with the modules that
    read the session's one tiny asv run kept on one worker (tests/xdist_scheduling.py)."""
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler
    from tests.xdist_scheduling import SharedRunFileScheduling

    return SharedRunFileScheduling(config, log)
