"""The harness the asv suite measures with; it belongs to the suite, not to the library under test.

asv runs HEAD's suite against each commit's library, so nothing here may rely on more than
fused_mlp's public functions, and nothing here changes when the library does: the eager and
torch.compile lines stay a fixed control.

What a workload is (Case, each op's shapes and cost, the grids, the modes) is the torch-free
vocabulary in workload/, which the dashboard reads too; here is the code that runs it:
    ops              each op's code: float64 reference, eager code, its peers (peer.py) by name
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
