"""The workload vocabulary, torch-free: what the suite measures and the dashboard reads.

    case            Case: the one description of a workload, with its stable text key
    ops             what each op is: inputs, flops, bytes, grid cases, its peers' names
    cost            flops, minimum bytes, device ceilings, the roofline floor
    grids           the named grids of Cases the suite runs
    fp8_cases       the FP8 dtypes' Cases in each grid; fp8_dtypes what those dtypes are
    modes           forward, backward, full: the training modes
    kernel_configs  the library's autotune configs the compile metrics list
    device_specs    the GPUs' published ceilings

The suite (benchmarks/) adds the torch side of each op (benchmarks/harness/ops); nothing here
imports torch, Triton, the library, the suite or the dashboard.
"""
