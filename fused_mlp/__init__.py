"""fused_mlp: Triton kernels that fuse an MLP's matmuls with their bias, activation and gating.

Public API:
    linear_act(x, weight, bias=None, activation="gelu_tanh")     act(x @ W.T + b), one kernel
    gated_up(x, w_gate, w_up, activation="gelu_tanh")            act(x @ Wg.T) * (x @ Wu.T), one kernel
    gated_mlp(x, w_gate, w_up, w_down, activation="gelu_tanh")   + down projection, two kernels
    narrow_mlp(x, weights, biases=None, activation="relu")       whole MLP (widths <= 128), one kernel
    pack_layers(weights, biases), narrow_mlp_packed(x, packed)    narrow_mlp with the layers packed once
    FusedLinear, FusedMLP, FusedGatedMLP, FusedNarrowMLP         nn.Modules with from_module()
    ACTIVATIONS, GATED_ACTIVATIONS                               the activation table
  FP8 (e4m3 weights; W8A8 with e4m3 x, or W8A16 with bf16/fp16 x):
    quantize_fp8(t, granularity="tensor"|"row", fp8_dtype=...), dequantize_fp8(q, scale)
    native_fp8_dtype(device)     the GPU's own e4m3 for W8A8: float8_e4m3fnuz on MI300, else e4m3fn
    linear_act_fp8(x, weight, weight_scale, bias=None, activation, x_scale=None, out_dtype=None)
    gated_up_fp8(x, w_gate, w_up, gate_scale, up_scale, activation, x_scale=None, out_dtype=None)
    gated_mlp_fp8(x, w_gate, w_up, w_down, gate_scale, up_scale, down_scale, activation, ...)
    FP8Linear, FP8GatedMLP                                       inference modules, from_module(m, fp8=...)

The kernels run on CUDA, or on the CPU under TRITON_INTERPRET=1 (set before import). The
benchmark harness that measures them (workloads, baselines, references, timing) lives with the
asv suite in benchmarks/, not here.
"""

from .activations import ACTIVATIONS, GATED_ACTIVATIONS
from .modules import FusedGatedMLP, FusedLinear, FusedMLP, FusedNarrowMLP
from .ops.gated_up import gated_mlp, gated_up
from .ops.linear_act import linear_act
from .ops.narrow_mlp import PackedMLP, narrow_mlp, narrow_mlp_packed, pack_layers
from .ops.fp8_gated import gated_mlp_fp8, gated_up_fp8
from .ops.fp8_linear import linear_act_fp8
from .quantize import dequantize_fp8, native_fp8_dtype, quantize_fp8
from .fp8_modules import FP8GatedMLP, FP8Linear

__all__ = [
    "ACTIVATIONS", "GATED_ACTIVATIONS", "FusedGatedMLP", "FusedLinear", "FusedMLP", "FusedNarrowMLP", "PackedMLP",
    "gated_mlp", "gated_up", "linear_act", "narrow_mlp", "narrow_mlp_packed", "pack_layers",
    "dequantize_fp8", "gated_mlp_fp8", "gated_up_fp8", "linear_act_fp8", "native_fp8_dtype",
    "quantize_fp8",
    "FP8GatedMLP", "FP8Linear",
]
