"""Synthetic asv histories (numpy only, no torch): asv's exact on-disk result format
(asv_history), and the histories the render benchmark, the tests and ``fused-mlp-dashboard --demo``
generate from it (histories). Installed with the dashboard, so the demo and tools/ need no tests/."""
