"""The harness the asv suite measures with; it belongs to the suite, not to the library under test.

asv runs HEAD's suite against each commit's library, so nothing here may rely on more than
fused_mlp's public functions, and nothing here changes when the library does: the eager and
torch.compile lines stay a fixed control.

Torch-free (the dashboard and the gate import these without torch installed):
    workloads   Case: the one description of a workload, with its stable text key
    ops         what each op is: inputs, cost, grid cases (and, torch side, reference and eager code)
    cost        flops, minimum bytes, device ceilings, the roofline floor
    grids       the named grids of Cases the suite runs

Torch side (imported by the suite, the tests and the CLIs):
    library          the fused_mlp under test, the one way in (and its compile check, fused_mlp.aot)
    tensors          random inputs for a Case; torch dtypes and activations
    references       float64 references' closeness check (tolerances per dtype)
    implementations  fused (fused_mlp's public API), eager, compile and each op's peers, by name
    timing           CUDA-event samples with a cold L2; device ceilings
    profiling        kernels one call launches (torch.profiler)
    environment      the machine and software identity a measurement came from

asv imports every module under benchmarks/, this package included, and takes any function named
time_*, track_*, mem_*, peakmem_* or timeraw_* for a benchmark: no name here may start so, and
the suite's modules import harness modules, not such names (`asv check` in the tests catches it).
"""
