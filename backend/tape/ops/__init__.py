"""Every primitive the engine knows, grouped by family; importing this package fills the registry."""
from backend.tape.ops import elementwise, linalg, movement, nn, precision, reduce, writes  # noqa: F401
