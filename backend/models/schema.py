"""The spec's field schema, served at GET /api/schema: every field's type, range, default and help, read from
the declarations (backend/models/spec.py, backend/models/kinds/) and the caps at the time of the request."""
from backend.models import kinds
from backend.models.caps import CAPS
from backend.models.spec import INPUT, LOSS, OPTIMIZER, TOP_LEVEL_FIELDS
from backend.models.training import PRECISION


def spec_schema():
    return {
        "caps": dict(CAPS),
        "fields": [field.describe() for field in TOP_LEVEL_FIELDS],
        "input": INPUT.describe(),
        "loss": LOSS.describe(),
        "optimizer": OPTIMIZER.describe(),
        "precision": PRECISION.describe(),
        "layers": kinds.schema(),
    }
