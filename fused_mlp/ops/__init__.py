"""One op per module: private @triton.jit kernels, then the launcher that validates and launches."""
