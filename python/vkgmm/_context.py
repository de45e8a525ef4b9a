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


def set_default_context(context: Context | None) -> None:
    """Make `context` the default (None: the next use makes a new one from the environment)."""
    global _default
    with _lock:
        _default = context


def resolve(context: Context | None) -> Context:
    return default_context() if context is None else context
