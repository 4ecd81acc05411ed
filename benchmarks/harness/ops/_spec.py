"""OpCode: the suite's code for one op, added to what the op is (workload/ops/<op>.py).

Each benchmarks/harness/ops/<op>.py subclasses its op's OpSpec with OpCode: the float64
reference, the eager code, the peers' calls (harness/peer.py). They import torch inside the
methods, so importing an op module never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.harness.peer import Peer


class OpCode:
    """The torch side of an op; mixed into the op's OpSpec subclass (which comes after it)."""

    peers: dict[str, Peer] = {}  # by name: the keys are the OpSpec's peer_names

    def reference(self, **inputs):
        """The exact result in float64 (rounding to the input dtype only where the op's
        contract stores an intermediate in it). Subclasses implement."""
        raise NotImplementedError

    def eager(self, **inputs):
        """The op as people write it in plain PyTorch. Subclasses implement."""
        raise NotImplementedError

    def fused(self, library, inputs: dict) -> Callable[[], object]:
        """A zero-argument call of the library's fused op on fixed inputs (for timing).

        `library` is the fused_mlp module of the commit under test. What a deployment does once
        at load time may be done here once, not in every call (ops override this for that)."""
        fn = self.fused_function(library)
        return lambda: fn(**inputs)

    def fused_function(self, library) -> Callable:
        fn = getattr(library, self.name, None)
        if not callable(fn):
            raise NotImplementedError(f"fused_mlp at this commit has no public {self.name}()")
        return fn
