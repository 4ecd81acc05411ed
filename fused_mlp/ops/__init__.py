"""The kernels, one module per op; KERNELS lists every Triton kernel for the compile check."""

from . import backward_gemm, fp8_gated, fp8_linear, gated_up, linear_act, narrow_mlp, narrow_mlp_backward

KERNELS = (*linear_act.KERNELS, *gated_up.KERNELS, *narrow_mlp.KERNELS, *fp8_linear.KERNELS, *fp8_gated.KERNELS,
           *backward_gemm.KERNELS, *narrow_mlp_backward.KERNELS)
