"""Unfused MLP modules as users write them, for from_module and profiling tests."""

from torch import nn


class SeedGeGLU(nn.Module):
    """The seed article's SimpleGeGLUMLP: F.gelu(tanh) inside forward, no activation submodule."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class LlamaStyleMLP(SeedGeGLU):
    """Llama's MLP: an act_fn submodule (SiLU)."""

    def __init__(self, dim, hidden):
        super().__init__(dim, hidden)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
