"""Each activation's Triton gradient helper against torch autograd of its torch reference, in float64."""

import pytest
import torch
import triton
import triton.language as tl

import fused_mlp
from fused_mlp.activations import ACTIVATIONS
from fused_mlp.ops._matmul_common import to_storage


@triton.jit
def _apply_grad(z_ptr, dy_ptr, out_ptr, n, GRAD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    z = tl.load(z_ptr + offs, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, GRAD(z, dy), mask=mask)


def _triton_grad(name, z, dy):
    out = torch.full_like(z, float("nan"))
    _apply_grad[(1,)](z, dy, out, z.numel(), GRAD=ACTIVATIONS[name].triton_grad,
                      BLOCK=triton.next_power_of_2(z.numel()))
    return out


def _torch_grad(name, z, dy):
    z64 = z.double().requires_grad_()
    ACTIVATIONS[name].torch_fn(z64).backward(dy.double())
    return z64.grad


@pytest.mark.parametrize("name", list(fused_mlp.ACTIVATIONS))
def test_gradient_helper_matches_torch_autograd(name, device):
    # both signs, the kink of relu at 0, the tails where tanh/sigmoid saturate
    z = torch.cat([torch.linspace(-12, 12, 97), torch.tensor([0.0, -0.0, 1e-4, -1e-4, 30.0, -30.0])]).to(device)
    dy = torch.randn(z.shape, generator=torch.Generator().manual_seed(1)).to(device)
    out, ref = _triton_grad(name, z, dy), _torch_grad(name, z, dy)
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-6), (out - ref).abs().max()


def test_relu_gradient_at_zero_is_zero(device):
    z = torch.zeros(4, device=device)
    assert torch.equal(_triton_grad("relu", z, torch.ones(4, device=device)), torch.zeros(4, device=device))


@pytest.mark.parametrize("name", list(fused_mlp.ACTIVATIONS))
def test_nan_propagates_as_in_torch(name, device):
    """NaN in z or in dy gives NaN exactly where torch's backward gives it (relu passes dy at NaN z)."""
    z = torch.tensor([float("nan"), 1.0, -1.0, 0.5], device=device)
    dy = torch.tensor([1.0, float("nan"), 2.0, 1.0], device=device)
    out, ref = _triton_grad(name, z, dy), _torch_grad(name, z, dy)
    assert torch.equal(torch.isnan(out), torch.isnan(ref)), (out, ref)


@triton.jit
def _store_cast(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, to_storage(tl.load(x_ptr + offs, mask=mask), out_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_kernel_stores_round_to_nearest_even_as_torch_does(dtype):
    """to_storage, the kernels' store cast, rounds fp32 as torch (and a GPU) does, ties, overflow,
    Inf and NaN included; the interpreter's own bf16 cast truncates."""
    gen = torch.Generator().manual_seed(0)
    ties = torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.3895e38, 65519.0, 65520.0])
    x = torch.cat([torch.randn(4000, generator=gen) * 100, ties,
                   torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0, -0.0])])
    out = torch.empty(x.shape, dtype=dtype)
    _store_cast[(1,)](x, out, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    expected = x.to(dtype)
    assert torch.equal(torch.isnan(out), torch.isnan(expected))
    finite = ~torch.isnan(expected)
    assert torch.equal(out[finite].view(torch.int16 if dtype != torch.float32 else torch.int32),
                       expected[finite].view(torch.int16 if dtype != torch.float32 else torch.int32))
