"""Frontend-agnostic core: the op set, the IR, the runtime and metrics (numpy only)."""
from . import dtypes, ir, ops  # noqa: F401
