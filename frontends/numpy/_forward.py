"""The names NumPy has and lnp does not lower itself: NumPy's own objects, forwarded.

A NumPy function called with a lazy array dispatches back to lazyx (NEP 18 / NEP 13), so
forwarding keeps every rule in one place: lnp.X(x) is exactly np.X(x).
"""

_NOT_FORWARDED = frozenset(("test",))  # numpy's pytest runner: not a namespace function


def forward(numpy_module, module_name, name):
    """numpy_module.name for a public name, else the AttributeError Python gives."""
    if not name.startswith("_") and name not in _NOT_FORWARDED:
        try:
            return getattr(numpy_module, name)
        except AttributeError:
            pass
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
