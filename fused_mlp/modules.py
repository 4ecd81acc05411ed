"""nn.Modules that own parameters and call the fused launchers.

Each keeps the parameter names of its unfused counterpart (nn.Linear's weight/bias, Llama's
gate_proj/up_proj/down_proj, nn.Sequential's layer list), so state_dicts load across, and each has
`from_module(m)` that takes the unfused module and returns the fused one with the same weights.
They train: each op has a backward (fused_mlp.ops), and under torch.no_grad() / inference_mode
the inference kernels run and nothing is saved. `recompute=True` saves only each op's input for
the backward and recomputes the forward GEMMs there (less memory, more compute); it is an
attribute, so it can be set on a module that from_module made.
"""

from torch import nn

from .activations import activation_of_module, get_activation
from .ops.gated_up import gated_mlp
from .ops.linear_act import linear_act
from .ops.narrow_mlp import narrow_mlp


def _split_sequential(seq, what: str) -> list[tuple[nn.Linear, str | None]]:
    """An nn.Sequential of Linear layers, each optionally followed by one activation module,
    as [(linear, activation name or None), ...]."""
    if not isinstance(seq, nn.Sequential):
        raise TypeError(f"{what}.from_module expects an nn.Sequential, got {type(seq).__name__}")
    layers: list[tuple[nn.Linear, str | None]] = []
    for i, m in enumerate(seq):
        if isinstance(m, nn.Linear):
            layers.append((m, None))
        elif layers and layers[-1][1] is None:
            layers[-1] = (layers[-1][0], activation_of_module(m))
        else:
            raise ValueError(
                f"{what}.from_module: module [{i}] ({type(m).__name__}) must follow an nn.Linear; "
                "expected Linear, activation, Linear, activation, ..."
            )
    if not layers:
        raise ValueError(f"{what}.from_module: the nn.Sequential holds no nn.Linear")
    return layers


def _recognised_activation(module: nn.Module | None) -> str | None:
    """The table name of an activation module, or None when there is none or it is not one we know."""
    if module is None:
        return None
    try:
        return activation_of_module(module)
    except ValueError:
        return None


class FusedLinear(nn.Linear):
    """nn.Linear followed by an activation, in one kernel: act(x @ weight.T + bias)."""

    def __init__(self, in_features, out_features, bias=True, activation="gelu_tanh", device=None, dtype=None,
                 recompute=False):
        get_activation(activation)
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.activation, self.recompute = activation, recompute

    def forward(self, x):
        return linear_act(x, self.weight, self.bias, self.activation, recompute=self.recompute)

    def extra_repr(self):
        return f"{super().extra_repr()}, activation={self.activation!r}, recompute={self.recompute}"

    @classmethod
    def from_module(cls, m: nn.Module) -> "FusedLinear":
        """From an nn.Linear (activation 'none') or nn.Sequential(nn.Linear, activation)."""
        if isinstance(m, nn.Linear):
            linear, act = m, "none"
        else:
            layers = _split_sequential(m, cls.__name__)
            if len(layers) != 1:
                raise ValueError(f"{cls.__name__}.from_module expects one Linear, found {len(layers)}")
            linear, act = layers[0][0], layers[0][1] or "none"
        fused = cls(linear.in_features, linear.out_features, bias=linear.bias is not None,
                    activation=act, device=linear.weight.device, dtype=linear.weight.dtype)
        fused.load_state_dict(linear.state_dict())
        return fused


class FusedMLP(nn.Module):
    """The transformer FFN Linear -> act -> Linear as two fused kernels (the activation and the
    first bias live in the first GEMM's epilogue, the second bias in the second's)."""

    def __init__(self, in_features, hidden_features, out_features=None, bias=True,
                 activation="gelu_tanh", device=None, dtype=None, recompute=False):
        super().__init__()
        get_activation(activation)
        self.activation, self.recompute = activation, recompute
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias, device=device, dtype=dtype)
        self.fc2 = nn.Linear(hidden_features, out_features or in_features, bias=bias, device=device, dtype=dtype)

    def forward(self, x):
        h = linear_act(x, self.fc1.weight, self.fc1.bias, self.activation, recompute=self.recompute)
        return linear_act(h, self.fc2.weight, self.fc2.bias, "none", recompute=self.recompute)

    @classmethod
    def from_module(cls, m: nn.Module) -> "FusedMLP":
        """From nn.Sequential(nn.Linear, activation, nn.Linear)."""
        layers = _split_sequential(m, cls.__name__)
        if len(layers) != 2 or layers[0][1] is None or layers[1][1] is not None:
            raise ValueError(f"{cls.__name__}.from_module expects nn.Sequential(Linear, activation, Linear)")
        (fc1, act), (fc2, _) = layers
        if (fc1.bias is None) != (fc2.bias is None):
            raise ValueError(f"{cls.__name__}.from_module: both Linears must have a bias, or neither")
        fused = cls(fc1.in_features, fc1.out_features, fc2.out_features, bias=fc1.bias is not None,
                    activation=act, device=fc1.weight.device, dtype=fc1.weight.dtype)
        fused.fc1.load_state_dict(fc1.state_dict())
        fused.fc2.load_state_dict(fc2.state_dict())
        return fused


class FusedGatedMLP(nn.Module):
    """down_proj(act(gate_proj(x)) * up_proj(x)): GeGLU (gelu_tanh) or SwiGLU (silu), no biases,
    in two kernels. Parameter names match Llama-style MLPs, so their state_dicts load directly."""

    def __init__(self, hidden_size, intermediate_size, activation="silu", device=None, dtype=None, recompute=False):
        super().__init__()
        get_activation(activation)
        self.activation, self.recompute = activation, recompute
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, **kw)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, **kw)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, **kw)

    def forward(self, x):
        return gated_mlp(x, self.gate_proj.weight, self.up_proj.weight, self.down_proj.weight, self.activation,
                         recompute=self.recompute)

    @classmethod
    def from_module(cls, m: nn.Module, activation: str | None = None) -> "FusedGatedMLP":
        """From any module with gate_proj / up_proj / down_proj nn.Linear layers (no biases).

        The activation is read from an `act_fn` / `act` / `activation` submodule when there is a
        recognised one; otherwise (e.g. F.gelu called inside forward) pass `activation=`.
        """
        projections = {}
        for name in ("gate_proj", "up_proj", "down_proj"):
            proj = getattr(m, name, None)
            if not isinstance(proj, nn.Linear):
                raise TypeError(f"{cls.__name__}.from_module: module has no nn.Linear `{name}`")
            if proj.bias is not None:
                raise ValueError(f"{cls.__name__}.from_module: `{name}` has a bias; the fused gated kernel has none")
            projections[name] = proj
        found = next((getattr(m, a) for a in ("act_fn", "act", "activation")
                      if isinstance(getattr(m, a, None), nn.Module)), None)
        if activation is None:
            if found is None:
                raise ValueError(
                    f"{cls.__name__}.from_module: no activation submodule (act_fn/act/activation) "
                    "found; pass activation='gelu_tanh' or 'silu'"
                )
            activation = activation_of_module(found)
        else:
            get_activation(activation)
            # An act_fn fused_mlp does not recognise is what activation= is for; a recognised
            # one must agree with it.
            own = _recognised_activation(found)
            if own is not None and own != activation:
                raise ValueError(
                    f"activation={activation!r} disagrees with the module's own {type(found).__name__} ({own!r})"
                )
        gate = projections["gate_proj"]
        fused = cls(gate.in_features, gate.out_features, activation=activation,
                    device=gate.weight.device, dtype=gate.weight.dtype)
        fused.load_state_dict({f"{n}.weight": p.weight for n, p in projections.items()})
        return fused


class FusedNarrowMLP(nn.Module):
    """A whole MLP with every width <= 128 in one kernel: widths (in, h1, ..., out), the
    activation after every hidden layer, output_activation after the last."""

    def __init__(self, widths, activation="relu", output_activation=None, bias=True, device=None, dtype=None):
        super().__init__()
        if len(widths) < 2:
            raise ValueError(f"widths={tuple(widths)}: need at least (in_features, out_features)")
        get_activation(activation)
        get_activation(output_activation or "none", "output_activation")
        self.activation, self.output_activation = activation, output_activation
        self.layers = nn.ModuleList(
            nn.Linear(i, o, bias=bias, device=device, dtype=dtype) for i, o in zip(widths[:-1], widths[1:])
        )

    def forward(self, x):
        biases = [layer.bias for layer in self.layers] if self.layers[0].bias is not None else None
        return narrow_mlp(x, [layer.weight for layer in self.layers], biases,
                          self.activation, self.output_activation)

    @classmethod
    def from_module(cls, m: nn.Module) -> "FusedNarrowMLP":
        """From nn.Sequential(Linear, act, Linear, act, ..., Linear[, output activation]); every
        hidden layer must use the same activation."""
        layers = _split_sequential(m, cls.__name__)
        hidden_acts = {act for _, act in layers[:-1]}
        if None in hidden_acts or len(hidden_acts) > 1:
            raise ValueError(
                f"{cls.__name__}.from_module: every hidden Linear must be followed by the same "
                f"activation; found {[act for _, act in layers[:-1]]}"
            )
        if len({l.bias is not None for l, _ in layers}) > 1:
            raise ValueError(f"{cls.__name__}.from_module: either every Linear has a bias or none has")
        widths = [layers[0][0].in_features] + [l.out_features for l, _ in layers]
        first = layers[0][0].weight
        fused = cls(widths, activation=hidden_acts.pop() if hidden_acts else "none",
                    output_activation=layers[-1][1], bias=layers[0][0].bias is not None,
                    device=first.device, dtype=first.dtype)
        for dst, (src, _) in zip(fused.layers, layers):
            dst.load_state_dict(src.state_dict())
        return fused
