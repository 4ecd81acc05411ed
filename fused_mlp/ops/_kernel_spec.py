"""KernelSpec: one Triton kernel of the library as the compile check (fused_mlp.aot) sees it."""

from collections.abc import Callable
from dataclasses import dataclass, field

from .._arch import ARCHS, Arch, w8a8_missing
from ._tuning import Exclusion

# The compile check's representative GEMM problem: a Llama-3-8B MLP at prefill (8192 tokens,
# dim 4096, hidden 14336), on meta tensors.
EXAMPLE_TOKENS, EXAMPLE_DIM, EXAMPLE_HIDDEN = 8192, 4096, 14336
# ... and the narrow MLP's: 5 layers over 2^21 rows (a NeRF-style batch), at each packed width.
NARROW_EXAMPLE_LAYERS, NARROW_EXAMPLE_ROWS, NARROW_EXAMPLE_WIDTHS = 5, 2**21, (64, 128)


@dataclass(frozen=True)
class KernelSpec:
    name: str  # the op it implements, e.g. "linear_act"
    variant: str  # which kernel of the op, e.g. "tile" (tutorial-03 tiles), "persistent" or "width=64"
    kernel: object  # the @triton.autotune-wrapped kernel (two variants may share one, told apart by config)
    candidates: list  # every triton.Config of this variant its autotuner may be offered on a GPU
    # (dtype, activation) -> (args, constexprs) of a representative problem on meta tensors,
    # built by the same function the launcher uses, so the compile specialises as a launch does
    example: Callable[[object, str], tuple[tuple, dict]]
    shared_estimate: Callable[[object, int, dict], int]  # (config, dtype bytes, constexprs) -> shared bytes
    excluded: tuple[Exclusion, ...] = ()  # configs the compile check measured breaking a rule
    # the dtypes it is launched with ("fp32" = IEEE dot, "tf32" = fp32 with a TF32 dot)
    dtypes: tuple[str, ...] = field(default=("bf16", "fp16", "fp32", "tf32"))
    # what an architecture must have for it to run there: "tma" (the persistent GEMM variant:
    # NVIDIA sm_90 and newer), "fp8" (the W8A8 kernels: FP8 tensor cores); see unavailable_because
    needs: tuple[str, ...] = ()
    # the variant of the same kernel whose every-activation compile covers this one's epilogue
    # code (the narrow MLP's widths differ by a constexpr only); None: check every activation
    epilogue_covered_by: str | None = None
    # the activations it is launched with (None: every one); linear_act's recompute backward never
    # runs the dact epilogue with "none" (dZ is dY there: the GEMM's result would be dead code)
    activations: tuple[str, ...] | None = None
    # False for a kernel without a dot (the backward's elementwise passes): no tensor-core rule
    tensor_cores: bool = True
    # True for a forward kernel's training form (STORE_PRE: it also stores the pre-activations
    # the backward reads): its own autotune choice, so the plan compiles its configs apart
    training_forward: bool = False

    @property
    def archs(self) -> tuple[str, ...]:
        """The checked architectures it runs on."""
        return tuple(name for name, arch in ARCHS.items() if unavailable_because(self, arch) is None)


def unavailable_because(spec: KernelSpec, arch: Arch) -> str | None:
    """Why `spec` does not run on `arch` at all (the compile check lists it with this), or None."""
    if "tma" in spec.needs and not arch.tma:
        if arch.vendor == "amd":
            return (f"needs TMA (tensor descriptors through a copy engine); {arch.name} (AMD Instinct) has none, "
                    "its tensor descriptors lower to plain loads: the tile variant runs there")
        return f"needs TMA, which {arch.name} does not have: the tile variant runs there"
    if "fp8" in spec.needs and (why := w8a8_missing(arch)) is not None:
        return f"{why}: W8A16 runs there"
    return None
