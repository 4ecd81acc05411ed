"""The measured tables behind the kernels' autotune configs (linear_act, gated_up, the backward
GEMMs and passes, the narrow MLP and its backward), kept here so each op file opens on its kernels.

A tile list says what a kernel may be offered; an exclusion names a config the compile check
(`python -m fused_mlp.aot`, erf-GELU: the costliest epilogue) measured breaking a rule on some
arch and dtype, with the numbers. Update a reason whenever the kernel's code changes it.
"""

from ._tuning import Exclusion, config_key, persistent_candidates

EVERY_DTYPE = ("bf16", "fp16", "fp32", "tf32")
BF16_FP16 = ("bf16", "fp16")
TRAINING_FORWARD = (("STORE_PRE", True),)  # the forward that also stores its pre-activations

# ---- linear_act ----------------------------------------------------------------------------------
# Measured under Triton 3.6.0 and 3.9.0: spill stores per thread at 255 registers.
LINEAR_ACT_EXCLUDED = (
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (128, 256, 64, 8, 3),
              "spills with the erf-GELU epilogue (116-192 B), on sm_80 with every epilogue"),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 64, 8, 3), "spills in IEEE fp32 (156 B; 8 KB with Triton 3.6)"),
    Exclusion(("sm_90",), ("fp32",), (64, 128, 64, 4, 4), "spills in IEEE fp32 (16 B; 8 KB with Triton 3.6)"),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 32, 8, 3), "spills in IEEE fp32 with int64 K offsets (12 B at 255 registers, Triton 3.9)"),
    # Blackwell and AMD (Triton 3.9): what the first-config rule of an unmeasured arch met first
    Exclusion(("sm_100",), BF16_FP16, (128, 256, 64, 8, 3), "spills with the erf-GELU epilogue on sm_100 (448 B at 255 registers)"),
)

# ---- gated_up ------------------------------------------------------------------------------------
# Measured under Triton 3.6.0 and 3.9.0. Two fp32 accumulators per tile leave little room.
GATED_UP_EXCLUDED = (
    Exclusion(("sm_80",), BF16_FP16, (128, 128, 64, 8, 3), "spills with every epilogue (212 B)"),
    Exclusion(("sm_80",), BF16_FP16, (64, 128, 64, 4, 4), "spills (8-40 B)"),
    Exclusion(("sm_80",), EVERY_DTYPE, (128, 128, 32, 8, 3), "spills (156 B-3 KB)"),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 32, 8, 3), "spills in IEEE fp32 (1.5-1.8 KB)"),
    Exclusion(("sm_90", "sm_80"), ("fp32",), (64, 64, 32, 4, 3), "spills in IEEE fp32 (8-840 B)"),
    Exclusion(("sm_90", "sm_80"), ("fp32",), (16, 64, 64, 4, 3), "spills in IEEE fp32 with Triton 3.9 (8-32 B)"),
    Exclusion(("sm_90",), ("tf32",), (16, 64, 64, 4, 3), "spills with Triton 3.9 (12 B)"),
    Exclusion(("sm_90",), BF16_FP16, (16, 64, 256, 4, 3), "spills (4-8 B)"),
    Exclusion(("sm_120",), BF16_FP16, (128, 128, 32, 8, 3), "spills on sm_120 (172 B at 255 registers, Triton 3.9)"),
    Exclusion(("sm_120",), BF16_FP16, (128, 128, 32, 8, 3, "tma", "sub2"), "spills on sm_120 (304 B, Triton 3.9)"),
    Exclusion(("gfx950",), ("fp32",), (64, 128, 64, 4, 2, "wpe2", "nk16", "kp1"),
              "spills in IEEE fp32 on gfx950 (644-684 B at 256 VGPRs, Triton 3.9)"),
    # Triton 3.6.0 (the GPU runners'), both variants: sm_100 then takes the 8-warp tile below
    Exclusion(("sm_100",), ("fp32",), (32, 64, 32, 4, 3),
              "spills in IEEE fp32 on sm_100 with Triton 3.6.0 (68-80 B at 255 registers)"),
    # the 8-warp tile of TWO_ACCUMULATOR_TILES is there for sm_100's IEEE fp32: not offered on the
    # measured archs, whose lists were measured without it (a choice, not a measured failure)
    Exclusion(("sm_90", "sm_80"), EVERY_DTYPE, (32, 64, 32, 8, 3),
              "kept for sm_100's IEEE fp32; not measured on this arch", policy=True),
    # the persistent variant (Triton 3.9): two 128x128 fp32 accumulators are all of one warpgroup's registers
    Exclusion(("sm_90",), BF16_FP16, (128, 128, 64, 4, 4, "tma", "sub2"),
              "spills with every epilogue (1.2 KB at 255 registers)"),
    # the training forward (STORE_PRE: G and U stored too), Triton 3.9 on sm_90 and sm_80, 3.6 on sm_90
    Exclusion(("sm_90",), BF16_FP16, (128, 128, 64, 8, 3), "spills storing G and U (8 B)", TRAINING_FORWARD),
    Exclusion(("sm_90",), BF16_FP16, (128, 128, 32, 8, 3), "spills storing G and U (44 B)", TRAINING_FORWARD),
    Exclusion(("sm_90",), ("tf32",), (128, 128, 32, 8, 3), "spills storing G and U in tf32 with Triton 3.6 (64 B)",
              TRAINING_FORWARD),
    # sm_100, Triton 3.9: the persistent two-accumulator loop does not compile there, warp-specialized
    # (VerifyWarpSpecializationPartitions) nor software-pipelined (TritonGPUHoistTMEMAlloc with the
    # "none" epilogue), measured on 128x128x64 w8 s4; the tile variant runs there.
    *(Exclusion(("sm_100",), EVERY_DTYPE, config_key(c),
                "does not compile for sm_100 with Triton 3.9 (warp specialization fails to verify the "
                "two-accumulator loop)") for c in persistent_candidates(operand_tiles=2)),
)

# ---- the backward GEMMs and elementwise passes (backward_gemm) ----------------------------------
# The epilogue constexpr of backward_gemm's GEMM kernel, by name.
BACKWARD_EPILOGUES = {"none": 0, "dact": 1, "dgated": 2}
_NONE, _DACT, _DGATED = ((("EPILOGUE", BACKWARD_EPILOGUES[name]),) for name in ("none", "dact", "dgated"))
_TWO_PRODUCTS = (("TWO_PRODUCTS", True),)  # dX of the gated MLP: dG @ Wg + dU @ Wu in one pass

# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps): the forward's training-size tiles; no decode
# tiles (the token count is M or K here, never 16). 128x256 and 128x128x32 tiles spill with every
# epilogue that loads a second operand (Triton 3.9), so they are not candidates.
BACKWARD_TILES = [(128, 128, 64, 3, 8), (64, 128, 64, 4, 4), (64, 64, 32, 3, 4), (32, 64, 32, 3, 4), (16, 64, 64, 3, 4)]
# The pair kernel holds two accumulators: 32x64x32 spilled (8 B, bf16 sm_90), so not a candidate;
# 32x32x32 is the one measured tile that fits IEEE fp32 on sm_80 (70-96 registers, no spill).
PAIR_TILES = [(128, 128, 64, 3, 8), (64, 128, 64, 4, 4), (64, 64, 32, 3, 4), (16, 64, 64, 3, 4), (32, 32, 32, 3, 4)]
# The elementwise passes (BLOCK_M, BLOCK_N, num_warps): wide in N for coalesced rows, rows enough
# to amortise the column sums' store.
ELEMENTWISE_TILES = [(32, 128, 4), (64, 128, 4), (64, 256, 8)]

# Triton 3.9 unless said. Where one dtype or arch was measured spilling, the config is pruned on
# those not yet measured too.
BACKWARD_EXCLUDED = (
    Exclusion(("sm_90",), ("fp32", "tf32"), (128, 128, 64, 8, 3),
              "spills with the dact epilogue (8 B IEEE fp32, 148 B tf32, sm_90)", _DACT),
    Exclusion(("sm_80",), EVERY_DTYPE, (128, 128, 64, 8, 3),
              "spills with the dact epilogue in fp32 on sm_90 (8-148 B); not kept on sm_80 unmeasured", _DACT),
    Exclusion(("sm_90", "sm_80"), EVERY_DTYPE, (64, 128, 64, 4, 4),
              "spills with the dact epilogue (8 B bf16, 16 B fp32, 88 B tf32, sm_90)", _DACT),
    # The dgated epilogue in column halves: every tile compiles clean (Triton 3.9 sm_90 and sm_80,
    # 3.6 sm_90) but this one; the whole tile at once spilled from 64x64 up (56 B-1 KB).
    Exclusion(("sm_90",), ("fp32",), (128, 128, 64, 8, 3),
              "spills with the dgated epilogue in IEEE fp32 with Triton 3.6 (8 B at 255 registers)", _DGATED),
    Exclusion(("sm_90", "sm_80"), ("fp32",), (64, 64, 32, 4, 3),
              "spills in IEEE fp32 (dX 12-24 B on sm_90, dW 536 B on sm_80)", _NONE),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 64, 8, 3), "spills in IEEE fp32 with Triton 3.6 (dX 12 B)", _NONE),
    # Blackwell and AMD (Triton 3.9): dX of the gated MLP (two products) in IEEE fp32
    Exclusion(("sm_120",), ("fp32",), (32, 64, 32, 4, 3), "spills in IEEE fp32 on sm_120 (dX gated 4 B)", _TWO_PRODUCTS),
    Exclusion(("gfx950",), ("fp32",), (128, 128, 64, 8, 2, "wpe2", "nk16", "kp1"),
              "spills in IEEE fp32 on gfx950 (dX gated 108 B)", _TWO_PRODUCTS),
    Exclusion(("gfx950",), ("fp32",), (64, 128, 64, 4, 2, "wpe2", "nk16", "kp1"),
              "spills in IEEE fp32 on gfx950 (dX gated 16 B)", _TWO_PRODUCTS),
)
PAIR_EXCLUDED = (
    Exclusion(("sm_90", "sm_80"), ("fp32",), (64, 64, 32, 4, 3), "spills in IEEE fp32 (16 B sm_90, 704-1160 B sm_80)"),
    Exclusion(("sm_80",), BF16_FP16, (128, 128, 64, 8, 3), "spills on sm_80 (212-236 B)"),
    Exclusion(("sm_80",), BF16_FP16, (64, 128, 64, 4, 4), "spills on sm_80 recomputing G and U (80 B)"),
    Exclusion(("sm_80",), ("fp32",), (16, 64, 64, 4, 3), "spills in IEEE fp32 on sm_80 (8-344 B)"),
    Exclusion(("sm_90",), ("tf32",), (16, 64, 64, 4, 3), "spills in tf32 with Triton 3.6 (4 B, recomputing G and U)"),
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (32, 32, 32, 4, 3),
              "a tile for fp32; spills in bf16 with Triton 3.6 on sm_90 (4 B)"),
    # dW and recompute share these rules (their launches have the same constexprs)
    Exclusion(("gfx950",), ("fp32",), (64, 128, 64, 4, 2, "wpe2", "nk16", "kp1"),
              "spills in IEEE fp32 on gfx950 recomputing G and U (764 B at 256 VGPRs, Triton 3.9)"),
)
# The dgated pass holds dH, G, U, dG and dU tiles: 64-row fp32 tiles spill (32-36 B, sm_90).
ELEMENTWISE_EXCLUDED = tuple(
    Exclusion(("sm_90", "sm_80"), ("fp32",), key, "spills in fp32 with the dgated pass (32-36 B, sm_90)", (("GATED", True),))
    for key in ((64, 128, 4, 1), (64, 256, 8, 1)))

# ---- the narrow MLP and its backward -------------------------------------------------------------
# (BLOCK_M, num_warps, num_stages): the weights are tiny, so the choice is rows per program vs
# registers (a 128-wide fp32 accumulator for 128 rows is 64 KB).
NARROW_TILES = [(32, 4, 2), (64, 4, 2), (128, 8, 2), (256, 8, 1)]
# Triton 3.6.0 and 3.9.0: 256 rows of a 128-wide layer spill (1-4 KB per thread).
NARROW_EXCLUDED = (
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (256, 8, 1), "spills at width 128 (1-4 KB)", (("WIDTH", 128),)),
)
# Rows per program of the on-chip dZ pass (as the forward's: rows vs registers), and rows per step
# of the weight-gradient sum (its (W, W) fp32 accumulator is 64 KB at W = 128).
NARROW_DZ_TILES = [(32, 4, 2), (64, 4, 2), (64, 8, 2), (128, 8, 2)]
NARROW_WGRAD_TILES = [(32, 4, 2), (64, 8, 2), (128, 8, 2)]
# Triton 3.6.0 on sm_100: 32 rows of a 64-wide layer spill (16-24 B at 56-71 registers with every
# epilogue but relu; none under 3.9.0); 64 rows at 8 warps compile clean under both (54-80 registers).
NARROW_WGRAD_EXCLUDED = (
    Exclusion(("sm_100",), BF16_FP16, (32, 4, 2), "spills at width 64 on sm_100 with Triton 3.6.0 (16-24 B)",
              (("WIDTH", 64),)),
)
# Triton 3.9, 5 layers: at width 128 the dZ pass holds dH, Z, dZ and a weight tile per row block;
# 64 and 128 rows spill, so 32 rows run there.
NARROW_DZ_EXCLUDED = (
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (64, 4, 2), "spills at width 128 (504 B, sm_90 bf16)", (("WIDTH", 128),)),
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (128, 8, 2), "spills at width 128 (804 B, sm_90 bf16)", (("WIDTH", 128),)),
    Exclusion(("sm_90", "sm_80"), BF16_FP16, (64, 8, 2), "spills at width 128 with Triton 3.9 (312 B, sm_90 bf16)",
              (("WIDTH", 128),)),
)
