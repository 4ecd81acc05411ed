"""Callbacks that fail show a message (or an empty figure) instead of a traceback, and the failure
is logged once (callbacks_boundary).
"""

from __future__ import annotations

import functools

from dashboard.ui.callbacks_boundary import log_failure
from dashboard.figures import build_empty_figure


def guarded(*fallback_factories):
    """Wrap a callback body: on an unexpected error, log it and return the fallbacks built from the
    error text (a message in the UI, never a traceback)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):  # kwargs: callbacks with named inputs
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # the UI shows the reason; the log one line (the first traceback per site)
                log_failure(f"callback {fn.__name__}", exc)
                text = f"Could not build this view: {type(exc).__name__}: {exc}"
                outs = [f(text) for f in fallback_factories]
                return outs[0] if len(outs) == 1 else tuple(outs)
        return inner

    return wrap


def error_figure(theme_getter=lambda: "light"):
    return lambda text: build_empty_figure(text, theme_getter())
