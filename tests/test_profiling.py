"""The profiler summary, the `python -m benchmarks.profile` command and the stored profile pass."""

import gzip
import json
import subprocess

import pytest
import torch

from benchmarks import profile as profile_cli
from benchmarks.harness import implementations
from benchmarks.harness.profiling import ProfileSummary, profile_call
from workload.case import Case

from unfused_modules import SeedGeGLU


def test_eager_geglu_dispatches_five_operators_on_cpu():
    module, x = SeedGeGLU(32, 64), torch.randn(16, 32)
    with torch.no_grad():
        summary = profile_call(lambda: module(x), "cpu", calls=3)
    ops = {k.name: k.launches_per_call for k in summary.kernels}
    assert ops == {"aten::linear": 3, "aten::gelu": 1, "aten::mul": 1}
    assert summary.launches_per_call == 5
    assert summary.device == "cpu" and summary.launch_overhead_seconds_per_call is None
    assert summary.host_seconds_per_call > 0 and summary.seconds_per_call > 0


def test_summary_round_trips_through_json(tmp_path):
    module, x = SeedGeGLU(32, 64), torch.randn(4, 32)
    with torch.no_grad():
        summary = profile_call(lambda: module(x), "cpu", calls=2, trace_path=str(tmp_path / "t" / "trace.json.gz"))
    again = ProfileSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again == summary
    trace = json.loads(gzip.decompress((tmp_path / "t" / "trace.json.gz").read_bytes()))
    assert "traceEvents" in trace  # Chrome trace format, opens in Perfetto


def test_command_prints_each_implementation(capsys):
    assert profile_cli.main(["--op", "gated", "--dtype", "fp32", "--M", "64", "--K", "32", "--N", "48",
                             "--activation", "gelu_tanh", "--impl", "fused,eager"]) == 0
    out = capsys.readouterr().out
    assert "# gated_mlp M=64 K=32 N=48 fp32 gelu_tanh" in out
    assert "## eager: 5 CPU ops per call" in out
    assert "| aten::linear | 3 |" in out
    assert "## fused: not profiled" in out


@pytest.mark.parametrize("argv,message", [
    (["--op", "linear", "--M", "4", "--K", "8", "--N", "8", "--impl", "cuda"], "implementation 'cuda'"),
    (["--op", "linear", "--M", "4", "--K", "8", "--N", "8", "--activation", "tanh"], "activation='tanh'"),
    (["--grid", "tiny"], "needs --grid, --machine and --save"),
])
def test_command_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        profile_cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_profile_pass_is_stored_per_machine_and_commit_without_overwriting(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    for cmd in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(profile_cli, "grid", lambda name: {"linear_act": [Case("linear_act", 8, 16, 32, "fp32", "relu")]})
    path = profile_cli.save_profile_pass("tiny", "cpu-box", str(tmp_path / "profiles"), "cpu")
    doc = json.loads(path.read_text())
    assert path.parent.name == "cpu-box" and path.stem == doc["commit_hash"]
    by_impl = {e["impl"]: e for e in doc["profiles"]}
    assert set(by_impl) == set(implementations.names("linear_act"))
    assert "CUDA" in by_impl["cublaslt"]["skipped"]
    assert all(e["seconds"] >= 0 for e in doc["profiles"])  # skipped ones too: their check may import a library
    assert doc["seconds"] >= sum(e["seconds"] for e in doc["profiles"])  # the whole pass
    assert ProfileSummary.from_dict(by_impl["eager"]["summary"]).launches_per_call == 2  # linear + relu
    with pytest.raises(SystemExit, match="exists; pass --force"):
        profile_cli.save_profile_pass("tiny", "cpu-box", str(tmp_path / "profiles"), "cpu")
    assert profile_cli.save_profile_pass("tiny", "cpu-box", str(tmp_path / "profiles"), "cpu", force=True) == path


def test_a_pass_over_a_grid_runs_under_that_grid_s_rules_and_records_each_impl_s_seconds(tmp_path, monkeypatch):
    """The pass over quick ran under the default grid's rules ($FUSED_MLP_GRID unset), so it
    autotuned max-autotune on quick's cases, which the quick grid leaves out; and the GPU
    session's model reads how long each profiled implementation took."""
    from workload.grids import GRID_ENV, current_grid

    repo = tmp_path / "repo"
    repo.mkdir()
    for cmd in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    monkeypatch.chdir(repo)
    monkeypatch.delenv(GRID_ENV, raising=False)
    case = Case("linear_act", 8, 16, 32, "fp32", "relu")
    monkeypatch.setattr(profile_cli, "grid", lambda name: {"linear_act": [case]})
    seen = []

    def fake_profile_case(case, impls, device, trace_dir, seconds):
        seen.append(current_grid())
        seconds["eager"] = 1.25  # a skipped impl's check may be timed too; this one's was not
        return {"eager": ProfileSummary.from_dict(json.loads(json.dumps(real["eager"].to_dict()))),
                "compile_max_autotune": "left out"}

    real = profile_cli.profile_case(case, ["eager"], "cpu")
    monkeypatch.setattr(profile_cli, "profile_case", fake_profile_case)
    doc = json.loads(profile_cli.save_profile_pass("quick", "cpu-box", str(tmp_path / "profiles"), "cpu").read_text())
    assert seen == ["quick"] and GRID_ENV not in __import__("os").environ  # as it was after the pass
    by_impl = {e["impl"]: e for e in doc["profiles"]}
    assert by_impl["eager"]["seconds"] == 1.25 and "seconds" not in by_impl["compile_max_autotune"]
