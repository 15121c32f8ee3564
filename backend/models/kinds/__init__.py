"""One registry entry per layer kind: its fields (type, range, default, help), shape plan and build.

Importing this package registers every kind; backend/models/spec.py and network.py dispatch through it and
GET /api/schema serves `schema()`. To add a kind, write its plan and build in the module of its family and
`register(Kind(name, help, plan, build, fields=(Field(...), ...), params=...))`.
"""
# The order of registration is the order the editor lists the kinds in.
from backend.models.kinds import dense  # noqa: F401, I001  (each import registers its kinds)
from backend.models.kinds import pointwise  # noqa: F401
from backend.models.kinds import norms  # noqa: F401
from backend.models.kinds import attention  # noqa: F401
from backend.models.kinds import wrappers  # noqa: F401
from backend.models.kinds.base import (
    LAYER_KINDS, Kind, build_layer, build_layers, chain, check_layer, check_layers, plan_layer, plan_layers, register, schema,
    scoped,
)

__all__ = ["LAYER_KINDS", "Kind", "build_layer", "build_layers", "chain", "check_layer", "check_layers", "plan_layer",
           "plan_layers", "register", "schema", "scoped"]
