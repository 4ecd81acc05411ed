"""The Kernels page across architectures: one config's registers, spills, shared memory and
instructions on H200 (sm_90), B200 (sm_100), RTX 50 (sm_120) and MI300 (gfx942) side by side, on a
generated history of one compile-metrics machine per architecture."""

import pytest

from dashboard.data import static_metrics
from dashboard.app import render_page
from dashboard.store.load_data import build_data
from dashboard.store.model import ResultsStore
from dashboard.pages import discover_pages, kernels
from tests.asv_fixtures import SeriesSpec, write_history
from tests.test_dashboard import texts

NVIDIA, AMD = "linear_act/tile 128x128x64 w8 s3", "linear_act/tile 128x128x64 w8 s2 wpe2 nk16 kp2"
# machine -> (its label of the config, registers, spill bytes, shared bytes, instructions)
MACHINES = {
    "compile-sm_90-triton-3.6.0": (NVIDIA, 160, 0, 99328, 3100),
    "compile-sm_100-triton-3.6.0": (NVIDIA, 157, 0, 99344, 3048),
    "compile-sm_120-triton-3.6.0": (NVIDIA, 174, 24, 66560, 2904),
    "compile-gfx942-triton-3.6.0": (AMD, 110, 0, 32768, 2408),
}
N_COMMITS = 3


def _series(label: str, values) -> list[SeriesSpec]:
    """Every machine has both labels (one suite list): its own with values, the other skipped."""
    out = []
    for metric, value in zip(static_metrics.METRICS, values):
        unit = {"registers": "registers", "B": "bytes", "KiB": "bytes", "instructions": "instructions"}[metric.shown_unit]
        for config in (NVIDIA, AMD):
            mine = config == label
            out.append(SeriesSpec(static_metrics.BENCHMARK_PREFIX + metric.key, (config, "bf16"), ("kernel_config", "dtype"),
                                  unit, base=float(value) if mine else 1.0, run_noise=0.0, sample_noise=0.0,
                                  skip_prob=0.0 if mine else 1.0))
    return out


@pytest.fixture(scope="module")
def four_archs(tmp_path_factory):
    root = tmp_path_factory.mktemp("archs") / "results"
    for machine, (label, *values) in MACHINES.items():
        write_history(root, _series(label, values), N_COMMITS, seed=5, machine=machine,
                      env_name="existing-py_opt_triton-3.6.0_bin_python", n_samples=1, warmup_outlier_prob=0.0,
                      machine_params={"triton": "3.6.0", "gpu": "none"}, merge_benchmarks=True)
    return root


def test_one_config_is_shown_on_the_four_architectures_side_by_side(four_archs):
    data = build_data(four_archs)
    choices = kernels.config_choices(data)
    assert choices == ["linear_act/tile 128x128x64 w8"]  # the NVIDIA and AMD forms are one config
    records, columns = kernels.across_architectures(data, choices[0], "bf16")
    assert [c["name"] for c in columns] == ["", "H200 (sm_90)", "B200 (sm_100)", "RTX 50 (sm_120)", "MI300 (gfx942)"]
    rows = {r["what"]: r for r in records}
    assert {a: rows["Registers per thread"][a] for a in ("sm_90", "sm_100", "sm_120", "gfx942")} == \
        {"sm_90": 160, "sm_100": 157, "sm_120": 174, "gfx942": 110}
    assert rows["config"]["gfx942"] == "128x128x64 w8 s2 wpe2 nk16 kp2" and rows["config"]["sm_90"] == "128x128x64 w8 s3"
    assert rows["Spill bytes per thread (B)"]["sm_120"] == 24 and rows["Spill bytes per thread (B)"]["sm_90"] == 0
    assert rows["Shared memory per block (KiB)"]["gfx942"] == 32


def test_a_config_no_architecture_compiled_gives_an_empty_table(four_archs):
    data = build_data(four_archs)
    records, columns = kernels.across_architectures(data, "gated_up/tile 64x64x32 w4", "bf16")
    assert columns == [{"name": "", "id": "what"}] and all(set(r) == {"what"} for r in records)


def test_the_kernels_page_offers_the_comparison(four_archs):
    store = ResultsStore(four_archs, detect_in_background=False)
    page = render_page(store, discover_pages(), "/kernels", "")
    store.close()
    assert "Across architectures" in texts(page)
    assert "value='linear_act/tile 128x128x64 w8'" in repr(page)  # the config dropdown opens on it


@pytest.mark.parametrize("machine, column", [("compile-gfx950-triton-3.6.0", "MI355X (gfx950)"),
                                             ("compile-sm_90-triton-3.6.0", "H200 (sm_90)"),
                                             ("h200-a-gpu0", None), ("compile-sm_75-triton-3.6.0", None)])
def test_a_machine_name_says_its_architecture(machine, column):
    assert static_metrics.arch_column(machine) == column


@pytest.fixture(scope="module")
def two_tritons(tmp_path_factory):
    """Two compile-metrics machines of one architecture, one per Triton version, that disagree."""
    root = tmp_path_factory.mktemp("tritons") / "results"
    for triton, registers in (("3.6.0", 160), ("3.9.0", 168)):
        write_history(root, _series(NVIDIA, (registers, 0, 99328, 3100)), N_COMMITS, seed=5,
                      machine=f"compile-sm_90-triton-{triton}", env_name=f"existing-py_opt_triton-{triton}_bin_python",
                      n_samples=1, warmup_outlier_prob=0.0, machine_params={"triton": triton, "gpu": "none"},
                      merge_benchmarks=True)
    return root


def test_two_machines_of_one_architecture_get_a_column_each_named_by_triton(two_tritons):
    records, columns = kernels.across_architectures(build_data(two_tritons), "linear_act/tile 128x128x64 w8", "bf16")
    assert [c["name"] for c in columns] == ["", "H200 (sm_90, Triton 3.6.0)", "H200 (sm_90, Triton 3.9.0)"]
    assert len({c["id"] for c in columns}) == 3
    rows = {r["what"]: r for r in records}
    assert {c["id"]: rows["Registers per thread"][c["id"]] for c in columns[1:]} == \
        {"sm_90-triton-3.6.0": 160, "sm_90-triton-3.9.0": 168}


ARCHS_RECORDED = ("sm_90", "sm_100", "sm_120", "gfx942", "gfx950")  # sm_80: no history recorded yet


def test_the_repositorys_own_results_hold_every_architectures_history():
    """results/: a compile-metrics machine per architecture over commits of main from the same
    first one (a commit whose library lacked the architecture is recorded, every value skipped),
    no spill in any config offered at each machine's newest commit, and one backward tile's
    registers on each."""
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    data = build_data(repo / "results")
    runs = {machine: run for (machine, _), run in data.static_runs.items()}
    assert set(runs) >= {f"compile-{arch}-triton-3.6.0" for arch in ARCHS_RECORDED}
    oldest = {run.commits["commit_hash"].iloc[0] for run in runs.values()}
    assert len(oldest) == 1  # every history starts where sm_90's does
    for machine, run in runs.items():
        newest = run.commits["commit_hash"].iloc[-1]
        records, _ = kernels.update_table(data, machine, newest, kernels.ALL, kernels.ALL, [])
        measured = [r for r in records if r["spill_bytes"] is not None]  # the others: gone, or did not compile
        assert measured and all(r["spill_bytes"] == 0 for r in measured), machine
        done = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", newest, "HEAD"])
        assert done.returncode in (0, 128), (machine, newest)  # 128: an exported tree without git history
    choice = "backward_gemm/dx 128x128x64 w8"  # a tile every architecture's first-config rule offers
    records, columns = kernels.across_architectures(data, choice, "bf16")
    registers = next(r for r in records if r["what"] == "Registers per thread")
    shown = [c["id"] for c in columns[1:]]
    assert set(ARCHS_RECORDED) <= set(shown)
    assert all(registers[arch] and registers[arch] > 0 for arch in ARCHS_RECORDED)
