"""The kernel configs whose static compile metrics the suite records (bench_compile.KernelResources),
fixed here in the suite (torch-free), never read from the library under test.

asv runs HEAD's suite against older commits, and asv stores a benchmark's values by parameter
position: params computed from each commit's library would file one config's registers under
another config's name whenever two commits offer different configs. So the params are this list;
a config a commit does not offer (or no longer offers) is skipped with that reason there.

One entry per kernel config, named as `python -m fused_mlp.aot` labels it: "<kernel>/<variant>
<config label>". To record a new kernel or config (a backward kernel, an FP8 variant), add its
entries here (`python -m benchmarks.bench_compile --missing` prints the ones HEAD's library
offers on an architecture that are not listed yet; tests/test_bench_compile.py fails until they
are). One list for every architecture (asv's benchmarks.json is one per results folder): AMD's
configs carry their knobs in the label (wpe2 nk16 kp2), so they are entries of their own.
Removing an entry hides its history from `asv publish`: leave old configs in.
"""

import os

ARCH = "sm_90"  # the default: the history of machine compile-sm_90-triton-<version>
# Every architecture a compile-metrics machine may record, one machine each
# (compile-<arch>-triton-<version>); benchmarks.run sets ARCH_ENV from that name.
COMPILE_ARCHS = ("sm_90", "sm_100", "sm_120", "gfx942", "gfx950")
ARCH_ENV = "FUSED_MLP_COMPILE_ARCH"


def compile_arch() -> str:
    """The architecture this process records (ARCH_ENV, default ARCH); an unknown one raises."""
    arch = os.environ.get(ARCH_ENV, ARCH)
    if arch not in COMPILE_ARCHS:
        raise ValueError(f"{ARCH_ENV}={arch!r} is not one of {list(COMPILE_ARCHS)}")
    return arch


def arch_of_machine(machine: str) -> str | None:
    """'compile-gfx942-triton-3.6.0' -> 'gfx942'; None for a machine that is not a compile-metrics one."""
    head, _, rest = machine.partition("-")
    arch = rest.split("-triton-", 1)[0] if head == "compile" and "-triton-" in rest else None
    return arch if arch in COMPILE_ARCHS else None
# fp8: e4m3 x and W, the only dtype the W8A8 kernels (linear_act_fp8/w8a8*, gated_up_fp8/w8a8) compile in
DTYPES = ("bf16", "fp16", "fp32", "tf32", "fp8")

KERNEL_CONFIGS = (
    # backward_elementwise: dZ = act'(Z) * dY with the bias gradient's column sums; dG, dU of gated_up
    "backward_elementwise/dact 32x128 w4 s1",
    "backward_elementwise/dact 64x128 w4 s1",
    "backward_elementwise/dact 64x256 w8 s1",
    "backward_elementwise/dgated 32x128 w4 s1",
    "backward_elementwise/dgated 64x128 w4 s1",
    "backward_elementwise/dgated 64x256 w8 s1",
    # backward_gemm: the backward GEMMs over strided views (dX, dW, the dact / dgated epilogues)
    "backward_gemm/dact 128x128x64 w8 s3",
    "backward_gemm/dact 16x64x64 w4 s3",
    "backward_gemm/dact 32x64x32 w4 s3",
    "backward_gemm/dact 64x64x32 w4 s3",
    "backward_gemm/dgated 128x128x64 w8 s3",
    "backward_gemm/dgated 16x64x64 w4 s3",
    "backward_gemm/dgated 32x64x32 w4 s3",
    "backward_gemm/dgated 64x128x64 w4 s4",
    "backward_gemm/dgated 64x64x32 w4 s3",
    "backward_gemm/dw 128x128x64 w8 s3",
    "backward_gemm/dw 16x64x64 w4 s3",
    "backward_gemm/dw 32x64x32 w4 s3",
    "backward_gemm/dw 64x128x64 w4 s4",
    "backward_gemm/dw 64x64x32 w4 s3",
    "backward_gemm/dx 128x128x64 w8 s3",
    "backward_gemm/dx 16x64x64 w4 s3",
    "backward_gemm/dx 32x64x32 w4 s3",
    "backward_gemm/dx 64x128x64 w4 s4",
    "backward_gemm/dx 64x64x32 w4 s3",
    "backward_gemm/dx_gated 128x128x64 w8 s3",
    "backward_gemm/dx_gated 16x64x64 w4 s3",
    "backward_gemm/dx_gated 32x64x32 w4 s3",
    "backward_gemm/dx_gated 64x128x64 w4 s4",
    "backward_gemm/dx_gated 64x64x32 w4 s3",
    # backward_gemm_pair: two products from one pass over A (dWg and dWu; G and U for recompute)
    "backward_gemm_pair/dw 128x128x64 w8 s3",
    "backward_gemm_pair/dw 16x64x64 w4 s3",
    "backward_gemm_pair/dw 32x32x32 w4 s3",
    "backward_gemm_pair/dw 64x128x64 w4 s4",
    "backward_gemm_pair/dw 64x64x32 w4 s3",
    "backward_gemm_pair/recompute 128x128x64 w8 s3",
    "backward_gemm_pair/recompute 16x64x64 w4 s3",
    "backward_gemm_pair/recompute 32x32x32 w4 s3",
    "backward_gemm_pair/recompute 64x128x64 w4 s4",
    "backward_gemm_pair/recompute 64x64x32 w4 s3",
    # gated_up: x @ Wg.T and x @ Wu.T with act(gate) * up in the epilogue (-train: also storing G and U)
    "gated_up/persistent 128x128x32 w8 s3 tma sub2",
    "gated_up/persistent 128x128x64 w8 s4 tma",
    "gated_up/persistent 16x64x128 w4 s6 tma",
    "gated_up/persistent 16x64x64 w4 s4 tma",
    "gated_up/persistent 64x128x64 w4 s4 tma",
    "gated_up/persistent 64x64x32 w4 s4 tma",
    "gated_up/persistent-train 128x128x32 w8 s3 tma sub2",
    "gated_up/persistent-train 128x128x64 w8 s4 tma",
    "gated_up/persistent-train 16x64x128 w4 s6 tma",
    "gated_up/persistent-train 16x64x64 w4 s4 tma",
    "gated_up/persistent-train 64x128x64 w4 s4 tma",
    "gated_up/persistent-train 64x64x32 w4 s4 tma",
    "gated_up/tile 128x128x32 w8 s3",
    "gated_up/tile 128x128x64 w8 s3",
    "gated_up/tile 16x64x64 w4 s3",
    "gated_up/tile 32x64x32 w4 s3",
    "gated_up/tile 32x64x32 w8 s3",
    "gated_up/tile 64x128x64 w4 s4",
    "gated_up/tile 64x64x32 w4 s3",
    "gated_up/tile-train 128x128x32 w8 s3",
    "gated_up/tile-train 16x64x64 w4 s3",
    "gated_up/tile-train 32x64x32 w4 s3",
    "gated_up/tile-train 32x64x32 w8 s3",
    "gated_up/tile-train 64x128x64 w4 s4",
    "gated_up/tile-train 64x64x32 w4 s3",
    # gated_up_fp8: the gated up projection with e4m3 weights (W8A8 and W8A16)
    "gated_up_fp8/w8a16 16x128x128 w4 s4",
    "gated_up_fp8/w8a16 16x32x256 w4 s5",
    "gated_up_fp8/w8a16 16x64x256 w4 s4",
    "gated_up_fp8/w8a16 32x64x128 w4 s4",
    "gated_up_fp8/w8a16 64x64x64 w4 s4",
    "gated_up_fp8/w8a8 128x64x128 w8 s4",
    "gated_up_fp8/w8a8 16x32x256 w4 s5",
    "gated_up_fp8/w8a8 16x64x256 w4 s4",
    "gated_up_fp8/w8a8 64x128x128 w8 s4",
    "gated_up_fp8/w8a8 64x64x128 w4 s4",
    # linear_act: act(x @ W.T + b) (-train: also storing the pre-activation Z)
    "linear_act/persistent 128x128x32 w8 s3 tma sub2",
    "linear_act/persistent 128x128x64 w4 s4 tma sub2",
    "linear_act/persistent 128x128x64 w8 s4 tma",
    "linear_act/persistent 128x256x64 w8 s3 tma sub2",
    "linear_act/persistent 16x32x256 w4 s6 tma",
    "linear_act/persistent 16x64x128 w4 s6 tma",
    "linear_act/persistent 16x64x64 w4 s4 tma",
    "linear_act/persistent 64x128x64 w4 s4 tma",
    "linear_act/persistent 64x64x32 w4 s4 tma",
    "linear_act/persistent-train 128x128x32 w8 s3 tma sub2",
    "linear_act/persistent-train 128x128x64 w4 s4 tma sub2",
    "linear_act/persistent-train 128x128x64 w8 s4 tma",
    "linear_act/persistent-train 128x256x64 w8 s3 tma sub2",
    "linear_act/persistent-train 16x32x256 w4 s6 tma",
    "linear_act/persistent-train 16x64x128 w4 s6 tma",
    "linear_act/persistent-train 16x64x64 w4 s4 tma",
    "linear_act/persistent-train 64x128x64 w4 s4 tma",
    "linear_act/persistent-train 64x64x32 w4 s4 tma",
    "linear_act/tile 128x128x32 w8 s3",
    "linear_act/tile 128x128x64 w8 s3",
    "linear_act/tile 16x64x256 w4 s3",
    "linear_act/tile 16x64x64 w4 s3",
    "linear_act/tile 32x64x32 w4 s3",
    "linear_act/tile 64x128x64 w4 s4",
    "linear_act/tile 64x64x32 w4 s3",
    "linear_act/tile-train 128x128x32 w8 s3",
    "linear_act/tile-train 128x128x64 w8 s3",
    "linear_act/tile-train 16x64x256 w4 s3",
    "linear_act/tile-train 16x64x64 w4 s3",
    "linear_act/tile-train 32x64x32 w4 s3",
    "linear_act/tile-train 64x128x64 w4 s4",
    "linear_act/tile-train 64x64x32 w4 s3",
    # linear_act_fp8: linear+activation with e4m3 weights (W8A8 and W8A16)
    "linear_act_fp8/w8a16 128x128x64 w8 s3",
    "linear_act_fp8/w8a16 16x128x128 w4 s4",
    "linear_act_fp8/w8a16 16x32x256 w4 s5",
    "linear_act_fp8/w8a16 16x64x256 w4 s4",
    "linear_act_fp8/w8a16 32x64x128 w4 s4",
    "linear_act_fp8/w8a16 64x128x64 w4 s4",
    "linear_act_fp8/w8a16 64x64x64 w4 s4",
    "linear_act_fp8/w8a8 128x128x128 w8 s3",
    "linear_act_fp8/w8a8 128x128x128 w8 s4",
    "linear_act_fp8/w8a8 128x64x128 w8 s4",
    "linear_act_fp8/w8a8 16x32x256 w4 s5",
    "linear_act_fp8/w8a8 16x64x256 w4 s4",
    "linear_act_fp8/w8a8 64x128x128 w4 s4",
    "linear_act_fp8/w8a8 64x128x128 w8 s4",
    "linear_act_fp8/w8a8 64x256x128 w8 s3",
    "linear_act_fp8/w8a8 64x64x128 w4 s4",
    "linear_act_fp8/w8a8-persistent 128x128x128 w8 s4 tma sub2",
    "linear_act_fp8/w8a8-persistent 16x32x256 w4 s6 tma",  # sm_120 (99 KB)
    # narrow_mlp: the whole MLP in one kernel, per padded width
    "narrow_mlp/width=128 128 w8 s2",
    "narrow_mlp/width=128 32 w4 s2",
    "narrow_mlp/width=128 64 w4 s2",
    "narrow_mlp/width=64 128 w8 s2",
    "narrow_mlp/width=64 256 w8 s1",
    "narrow_mlp/width=64 32 w4 s2",
    "narrow_mlp/width=64 64 w4 s2",
    # narrow_mlp_backward: the on-chip dZ pass and the split-buffer weight gradients
    "narrow_mlp_backward/dz width=128 32 w4 s2",
    "narrow_mlp_backward/dz width=64 128 w8 s2",
    "narrow_mlp_backward/dz width=64 32 w4 s2",
    "narrow_mlp_backward/dz width=64 64 w4 s2",
    "narrow_mlp_backward/dz width=64 64 w8 s2",
    "narrow_mlp_backward/wgrad width=128 128 w8 s2",
    "narrow_mlp_backward/wgrad width=128 32 w4 s2",
    "narrow_mlp_backward/wgrad width=128 64 w8 s2",
    "narrow_mlp_backward/wgrad width=64 128 w8 s2",
    "narrow_mlp_backward/wgrad width=64 32 w4 s2",
    "narrow_mlp_backward/wgrad width=64 64 w8 s2",
    # AMD Instinct (gfx942: kp2, gfx950: kp1): the same tiles in the AMD backend's form, with its knobs
    "backward_elementwise/dact 32x128 w4 s1 wpe2 nk16 kp1",
    "backward_elementwise/dact 32x128 w4 s1 wpe2 nk16 kp2",
    "backward_elementwise/dgated 32x128 w4 s1 wpe2 nk16 kp1",
    "backward_elementwise/dgated 32x128 w4 s1 wpe2 nk16 kp2",
    "backward_gemm/dact 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm/dact 128x128x64 w8 s2 wpe2 nk16 kp2",
    "backward_gemm/dact 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm/dgated 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm/dgated 128x128x64 w8 s2 wpe2 nk16 kp2",
    "backward_gemm/dgated 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm/dw 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm/dw 128x128x64 w8 s2 wpe2 nk16 kp2",
    "backward_gemm/dw 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm/dx 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm/dx 128x128x64 w8 s2 wpe2 nk16 kp2",
    "backward_gemm/dx 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm/dx_gated 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm/dx_gated 128x128x64 w8 s2 wpe2 nk16 kp2",
    "backward_gemm/dx_gated 64x128x64 w4 s2 wpe2 nk16 kp1",
    "backward_gemm/dx_gated 64x64x32 w4 s2 wpe2 nk16 kp1",
    "backward_gemm/dx_gated 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm_pair/dw 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm_pair/dw 64x64x32 w4 s2 wpe2 nk16 kp1",
    "backward_gemm_pair/dw 64x64x32 w4 s2 wpe2 nk16 kp2",
    "backward_gemm_pair/recompute 128x128x64 w8 s2 wpe2 nk16 kp1",
    "backward_gemm_pair/recompute 64x64x32 w4 s2 wpe2 nk16 kp1",
    "backward_gemm_pair/recompute 64x64x32 w4 s2 wpe2 nk16 kp2",
    "gated_up/tile 128x128x32 w8 s2 wpe2 nk16 kp1",
    "gated_up/tile 128x128x32 w8 s2 wpe2 nk16 kp2",
    "gated_up/tile 128x128x64 w8 s2 wpe2 nk16 kp1",
    "gated_up/tile 64x64x32 w4 s2 wpe2 nk16 kp2",
    "gated_up/tile-train 128x128x32 w8 s2 wpe2 nk16 kp1",
    "gated_up/tile-train 128x128x32 w8 s2 wpe2 nk16 kp2",
    "gated_up/tile-train 128x128x64 w8 s2 wpe2 nk16 kp1",
    "gated_up/tile-train 64x64x32 w4 s2 wpe2 nk16 kp2",
    "gated_up_fp8/w8a16 16x128x128 w4 s2 wpe2 nk16 kp1",
    "gated_up_fp8/w8a16 16x32x256 w4 s2 wpe2 nk16 kp1",
    "gated_up_fp8/w8a16 16x32x256 w4 s2 wpe2 nk16 kp2",
    "gated_up_fp8/w8a16 32x64x128 w4 s2 wpe2 nk16 kp2",
    "gated_up_fp8/w8a16 64x128x64 w4 s2 wpe2 nk16 kp1",
    "gated_up_fp8/w8a8 128x128x128 w8 s2 wpe2 nk16 kp1",
    "gated_up_fp8/w8a8 128x64x128 w8 s2 wpe2 nk16 kp2",
    "linear_act/tile 128x128x32 w8 s2 wpe2 nk16 kp2",
    "linear_act/tile 128x128x64 w8 s2 wpe2 nk16 kp1",
    "linear_act/tile 128x128x64 w8 s2 wpe2 nk16 kp2",
    "linear_act/tile 128x256x64 w8 s2 wpe2 nk16 kp1",
    "linear_act/tile-train 128x128x32 w8 s2 wpe2 nk16 kp2",
    "linear_act/tile-train 128x128x64 w8 s2 wpe2 nk16 kp1",
    "linear_act/tile-train 128x128x64 w8 s2 wpe2 nk16 kp2",
    "linear_act/tile-train 128x256x64 w8 s2 wpe2 nk16 kp1",
    "linear_act_fp8/w8a16 16x32x256 w4 s2 wpe2 nk16 kp1",
    "linear_act_fp8/w8a16 16x64x256 w4 s2 wpe2 nk16 kp2",
    "linear_act_fp8/w8a16 32x64x128 w4 s2 wpe2 nk16 kp1",
    "linear_act_fp8/w8a8 128x128x128 w8 s2 wpe2 nk16 kp1",
    "linear_act_fp8/w8a8 128x128x128 w8 s2 wpe2 nk16 kp2",
    "narrow_mlp/width=128 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp/width=128 32 w4 s2 wpe2 nk16 kp2",
    "narrow_mlp/width=64 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp/width=64 32 w4 s2 wpe2 nk16 kp2",
    "narrow_mlp_backward/dz width=128 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp_backward/dz width=128 32 w4 s2 wpe2 nk16 kp2",
    "narrow_mlp_backward/dz width=64 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp_backward/dz width=64 32 w4 s2 wpe2 nk16 kp2",
    "narrow_mlp_backward/wgrad width=128 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp_backward/wgrad width=128 32 w4 s2 wpe2 nk16 kp2",
    "narrow_mlp_backward/wgrad width=64 32 w4 s2 wpe2 nk16 kp1",
    "narrow_mlp_backward/wgrad width=64 32 w4 s2 wpe2 nk16 kp2",
)

# The CPU pipeline check (tiny grid) compiles one kernel in one dtype.
TINY_KERNELS, TINY_DTYPES = ("linear_act",), ("bf16",)


def series_name(kernel: str, variant: str, config_label: str) -> str:
    """The kernel_config parameter: 'linear_act/tile 128x128x64 w8 s3'."""
    return f"{kernel}/{variant} {config_label}"


def kernel_of(name: str) -> str:
    return name.split("/", 1)[0]


def params(grid: str) -> list[list[str]]:
    """[kernel configs, dtypes] of grid `grid`: every listed config, or the tiny grid's few."""
    if grid == "tiny":
        return [[n for n in KERNEL_CONFIGS if kernel_of(n) in TINY_KERNELS], list(TINY_DTYPES)]
    return [list(KERNEL_CONFIGS), list(DTYPES)]
