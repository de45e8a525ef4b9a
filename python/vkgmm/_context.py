"""The Context vkgmm's functions use when given none: made on first use, shared by every thread."""

from __future__ import annotations

import threading

from ._vkgmm import Context

_lock = threading.Lock()
_default: Context | None = None


def default_context() -> Context:
    """The default Context (device from $VKGMM_DEVICE, options from the environment), made on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = Context()
        return _default


def checked(context):
    """context as given, refused (TypeError naming it) unless a Context or None."""
    if context is not None and not isinstance(context, Context):
        raise TypeError(f"context: expected a vkgmm.Context or None, got {type(context).__name__}")
    return context


def set_default_context(context: Context | None) -> None:
    """Make `context` the default (None: the next use makes a new one from the environment)."""
    global _default
    checked(context)
    with _lock:
        _default = context


def resolve(context: Context | None) -> Context:
    """The Context a call runs on: `context`, or the default for None."""
    return default_context() if checked(context) is None else context
