"""Analytic activation memory at GPT scale: the saved-tensor rows of a layer, resident state, schedules, fit.

    from backend.ledger import parse_config, build_ledger
    ledger = build_ledger(parse_config({"layers": "12", "batch": "8"}))
"""
from backend.ledger.config import FIELDS, MODEL_PRESETS, PRESET_COMMON, LedgerConfig, LedgerConfigError, parse_config
from backend.ledger.ledger import activation_bytes, build_ledger

__all__ = ["FIELDS", "LedgerConfig", "LedgerConfigError", "parse_config", "build_ledger", "activation_bytes"]
