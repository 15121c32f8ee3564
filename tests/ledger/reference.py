"""The reference GPT the published per-layer figures are for (12 × 2048, 16 heads, no position table), as fields.

The ledger's defaults are GPT-2 small; tests that pin the reference figures ask for this model by name."""
from backend.ledger import MODEL_PRESETS, PRESET_COMMON, parse_config

REFERENCE = {**PRESET_COMMON, **{name: value for name, value in MODEL_PRESETS["reference"].items() if name != "title"}}


def reference_config(**values):
    """The reference GPT (at the defaults' batch 8, fp32, naive attention, dropout, Adam), with `values` changed."""
    return parse_config({**REFERENCE, **values})
