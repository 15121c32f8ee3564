"""Model specs: validation and caps, presets, and spec → a built model whose forward runs on the tape."""
from backend.models import presets
from backend.models.errors import CapError, SpecError
from backend.models.model import Model
from backend.models.spec import validate_spec

__all__ = ["CapError", "Model", "SpecError", "presets", "validate_spec"]
