"""nn.Modules with e4m3 weights, for inference: FP8Linear (linear + activation) and FP8GatedMLP.

    fp8 = FP8Linear.from_module(linear_or_fused_linear, fp8="w8a16")     # weight-only, decode
    fp8 = FP8GatedMLP.from_module(llama_mlp, fp8="w8a8")                 # e4m3 x too (sm_89+)

from_module takes what FusedLinear.from_module / FusedGatedMLP.from_module take (and reads the
activation the same way), quantizes each weight once (per output channel by default) and keeps
it as a buffer `weight` (e4m3) beside `weight_scale` (float32), the names FP8 checkpoints use.
W8A16 weights are float8_e4m3fn. W8A8 weights are in the encoding of the GPU the module's
weights are on when from_module quantizes them (native_fp8_dtype: float8_e4m3fnuz on
MI300X/MI325X, float8_e4m3fn elsewhere), or in `fp8_dtype`; W8A8 quantizes x on every call into
the weights' encoding (per token by default, amax / largest). The output has x's dtype. Forward
only: the FP8 kernels have no backward.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate as v
from .activations import get_activation
from .modules import FusedGatedMLP, FusedLinear
from .ops import _fp8_common as fp8
from .ops.fp8_gated import gated_mlp_fp8
from .ops.fp8_linear import linear_act_fp8
from .quantize import (E4M3_DTYPES, FP8_DTYPE, GRANULARITIES, check_fp8_dtype, check_scale, native_fp8_dtype,
                       quantize_activations_fp8, quantize_fp8)


def _check_choices(fp8_form, weight_granularity, x_granularity) -> None:
    if fp8_form not in fp8.FORMS:
        raise ValueError(f"fp8={fp8_form!r} is not supported; expected one of {list(fp8.FORMS)} "
                         "(w8a8: e4m3 x and weights, sm_89+; w8a16: weight-only)")
    if weight_granularity not in GRANULARITIES:
        raise ValueError(f"weight_granularity={weight_granularity!r}; expected one of {list(GRANULARITIES)}")
    if fp8_form == "w8a16" and x_granularity is not None:
        raise ValueError("x_granularity is for fp8='w8a8' only: W8A16 does not quantize x")
    if fp8_form == "w8a8" and x_granularity not in GRANULARITIES:
        raise ValueError(f"x_granularity={x_granularity!r}; expected one of {list(GRANULARITIES)}")


def _weight_dtype(fp8_form: str, fp8_dtype, weight: torch.Tensor) -> torch.dtype:
    """The e4m3 encoding from_module quantizes the weights in: W8A16's e4m3fn; W8A8's `fp8_dtype`,
    else the one of the GPU the weights are on."""
    if fp8_dtype is None:
        return native_fp8_dtype(weight.device) if fp8_form == "w8a8" else FP8_DTYPE
    check_fp8_dtype(fp8_dtype)
    if fp8_form == "w8a16" and fp8_dtype != FP8_DTYPE:
        raise ValueError(f"fp8_dtype={fp8_dtype} with fp8='w8a16': W8A16 up-casts float8_e4m3fn weights")
    return fp8_dtype


def _quantized_weight(name: str, weight: torch.Tensor, granularity: str,
                      fp8_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    if not torch.isfinite(weight).all():
        raise ValueError(f"{name} holds NaN or Inf: it has no FP8 scale (clean it before quantizing)")
    return quantize_fp8(weight.detach(), granularity, fp8_dtype=fp8_dtype)


def _check_scales_after_load(module: "FP8Linear", incompatible_keys) -> None:
    check_scale("weight_scale", module.weight_scale, module.weight.shape[0], "weight (output channels)")


class FP8Linear(nn.Module):
    """act(x @ W.T * scales + bias) with W in e4m3: one linear_act_fp8 kernel per call."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None = None,
                 activation: str = "none", fp8_form: str = "w8a16", x_granularity: str | None = None):
        """From an already-quantized (out_features, in_features) e4m3 weight and its fp32 scales
        ((out_features,) or (1,)); from_module is the usual way in."""
        super().__init__()
        if fp8_form == "w8a8" and x_granularity is None:
            x_granularity = "row"
        _check_choices(fp8_form, "row", x_granularity)
        get_activation(activation)
        takes = E4M3_DTYPES if fp8_form == "w8a8" else (FP8_DTYPE,)
        if not isinstance(weight, torch.Tensor) or weight.dtype not in takes or weight.dim() != 2:
            got = f"{weight.dtype} {tuple(weight.shape)}" if isinstance(weight, torch.Tensor) else type(weight).__name__
            names = " or ".join(str(d).removeprefix("torch.") for d in takes)
            raise TypeError(f"weight must be a 2-D {names} tensor for fp8={fp8_form!r} (quantize_fp8(w, 'row')), "
                            f"got {got}")
        if fp8_form == "w8a8" and weight.device.type == "cuda":
            fp8.check_fp8_tensor_cores(weight.device, weight.dtype)
        check_scale("weight_scale", weight_scale, weight.shape[0], "weight (output channels)")
        if bias is not None:
            v.check_tensor("bias", bias, ndim=1)
            v.check_shape("bias", bias.shape, (weight.shape[0],), "one value per output feature, weight.shape[0]")
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale.reshape(-1).contiguous())
        self.register_buffer("bias", None if bias is None else bias.detach())
        self.activation, self.fp8_form, self.x_granularity = activation, fp8_form, x_granularity
        # Scales are checked here and after every load_state_dict, so forward skips the kernels'
        # per-call read-back of them.
        self.register_load_state_dict_post_hook(_check_scales_after_load)  # a function: the module pickles

    @property
    def in_features(self) -> int:
        return self.weight.shape[1]

    @property
    def out_features(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xq, x_scale, out_dtype = _fp8_input(x, self.fp8_form, self.x_granularity, self.weight.dtype,
                                            type(self).__name__)
        return linear_act_fp8(xq, self.weight, self.weight_scale, self.bias, self.activation, x_scale=x_scale,
                              out_dtype=out_dtype, check_scales=False)

    def extra_repr(self) -> str:
        x = f", x_granularity={self.x_granularity!r}" if self.fp8_form == "w8a8" else ""
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"activation={self.activation!r}, fp8={self.fp8_form!r}{x}")

    @classmethod
    def from_module(cls, m: nn.Module, fp8: str = "w8a16", weight_granularity: str = "row",
                    x_granularity: str | None = None, fp8_dtype: torch.dtype | None = None) -> "FP8Linear":
        """From what FusedLinear.from_module takes (nn.Linear, nn.Sequential(nn.Linear,
        activation)) or a FusedLinear; the weight quantized per `weight_granularity`, in
        `fp8_dtype` (by default W8A8's native_fp8_dtype of the weight's device; W8A16's e4m3fn)."""
        if fp8 == "w8a8" and x_granularity is None:
            x_granularity = "row"
        _check_choices(fp8, weight_granularity, x_granularity)
        linear = m if isinstance(m, FusedLinear) else FusedLinear.from_module(m)
        weight, scale = _quantized_weight("weight", linear.weight, weight_granularity,
                                          _weight_dtype(fp8, fp8_dtype, linear.weight))
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(weight, scale, bias, linear.activation, fp8, x_granularity)


class FP8GatedMLP(nn.Module):
    """down_proj(act(gate_proj(x)) * up_proj(x)) with e4m3 weights: gated_mlp_fp8 (the gated
    kernel, then the down projection). gate_proj / up_proj / down_proj are FP8Linear, so the
    state_dict keys are gate_proj.weight, gate_proj.weight_scale, ... as in FP8 checkpoints."""

    def __init__(self, gate_proj: FP8Linear, up_proj: FP8Linear, down_proj: FP8Linear, activation: str = "silu"):
        super().__init__()
        get_activation(activation)
        projections = dict(gate_proj=gate_proj, up_proj=up_proj, down_proj=down_proj)
        forms = {p.fp8_form for p in projections.values()}
        granularities = {p.x_granularity for p in projections.values()}
        if len(forms) > 1 or len(granularities) > 1:
            raise ValueError(f"gate_proj, up_proj and down_proj must share one fp8 form and x_granularity, "
                             f"got {sorted(forms)} and {sorted(map(str, granularities))}")
        encodings = {str(p.weight.dtype) for p in projections.values()}
        if len(encodings) > 1:
            raise ValueError(f"gate_proj, up_proj and down_proj must share one e4m3 encoding, got {sorted(encodings)}")
        if (gate_proj.weight_scale.numel() > 1) != (up_proj.weight_scale.numel() > 1):
            raise ValueError("gate_proj and up_proj must both have per-channel or both per-tensor scales")
        for name, p in projections.items():
            if p.bias is not None or p.activation != "none":
                raise ValueError(f"{name} must be a plain projection (no bias, activation 'none')")
        self.gate_proj, self.up_proj, self.down_proj = gate_proj, up_proj, down_proj
        self.activation, self.fp8_form, self.x_granularity = activation, gate_proj.fp8_form, gate_proj.x_granularity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xq, x_scale, out_dtype = _fp8_input(x, self.fp8_form, self.x_granularity, self.gate_proj.weight.dtype,
                                            type(self).__name__)
        g, u, d = self.gate_proj, self.up_proj, self.down_proj
        return gated_mlp_fp8(xq, g.weight, u.weight, d.weight, g.weight_scale, u.weight_scale, d.weight_scale,
                             self.activation, x_scale=x_scale, out_dtype=out_dtype, check_scales=False)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, fp8={self.fp8_form!r}"

    @classmethod
    def from_module(cls, m: nn.Module, fp8: str = "w8a16", activation: str | None = None,
                    weight_granularity: str = "row", x_granularity: str | None = None,
                    fp8_dtype: torch.dtype | None = None) -> "FP8GatedMLP":
        """From what FusedGatedMLP.from_module takes (a module with gate_proj / up_proj /
        down_proj nn.Linear layers, no biases; the activation read or passed the same way); the
        weights' encoding as in FP8Linear.from_module."""
        if fp8 == "w8a8" and x_granularity is None:
            x_granularity = "row"
        _check_choices(fp8, weight_granularity, x_granularity)
        fused = m if isinstance(m, FusedGatedMLP) else FusedGatedMLP.from_module(m, activation)
        if activation is not None and activation != fused.activation:
            raise ValueError(f"activation={activation!r} disagrees with the module's own ({fused.activation!r})")
        projections = {}
        fp8_dtype = _weight_dtype(fp8, fp8_dtype, fused.gate_proj.weight)
        for name in ("gate_proj", "up_proj", "down_proj"):
            weight, scale = _quantized_weight(f"{name}.weight", getattr(fused, name).weight, weight_granularity,
                                              fp8_dtype)
            projections[name] = FP8Linear(weight, scale, None, "none", fp8, x_granularity)
        return cls(**projections, activation=fused.activation)


def _fp8_input(x, fp8_form: str, x_granularity: str | None, weight_dtype: torch.dtype, owner: str):
    """(what the kernel takes for x, its scales or None, the output dtype = x's) for the form
    (W8A8: x quantized into the weights' encoding); a TypeError naming the module and the dtypes
    it takes otherwise."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{owner}: x must be a torch.Tensor, got {type(x).__name__}")
    if fp8_form == "w8a16":
        if x.dtype not in fp8.ACTIVATION_DTYPES:
            raise TypeError(f"{owner}(fp8='w8a16') takes bfloat16 or float16 x, got {x.dtype}")
        return x, None, x.dtype
    if x.dtype not in fp8.OUT_DTYPES:
        raise TypeError(f"{owner}(fp8='w8a8') takes bfloat16, float16 or float32 x (it quantizes x itself), "
                        f"got {x.dtype}")
    xq, x_scale = quantize_activations_fp8(x, x_granularity, fp8_dtype=weight_dtype)
    return xq, x_scale, x.dtype
