"""The asv-format history writer, for the tests: it lives in the installed, torch-free
dashboard.synthetic.asv_history (the demo and tools/ use it too); every name is re-exported."""

from dashboard.synthetic import asv_history as _writer

globals().update({k: v for k, v in vars(_writer).items() if not k.startswith("__")})
