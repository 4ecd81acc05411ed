"""The asv suite. asv imports this package from the checkout it runs (HEAD's) and the library from
the commit it measures (installed in its environment, or first on ASV_PYTHONPATH).

The layers below the suite (workload, asv_results, regressions) are part of the suite's own
checkout, not of the measured commit: a commit's wheel carries its own copies of them, or none
(commits from before they were packages), and HEAD's suite must speak HEAD's vocabulary. So they
are imported from the directory beside this package, before anything on sys.path.
"""

import importlib.machinery
import os
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKOUT_PACKAGES = ("workload", "asv_results", "regressions")


class _FromThisCheckout:
    """A meta path finder for CHECKOUT_PACKAGES: found in CHECKOUT only (their submodules follow
    through the package's own __path__)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in CHECKOUT_PACKAGES:
            return importlib.machinery.PathFinder.find_spec(fullname, [CHECKOUT])
        return None


if not any(type(finder).__name__ == _FromThisCheckout.__name__ for finder in sys.meta_path):
    sys.meta_path.insert(0, _FromThisCheckout())
