"""The one way JSON values become stored text: compact, ASCII-only (lone surrogates survive), no NaN."""
import json


def dump(value) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def load(text: str):
    return json.loads(text)
