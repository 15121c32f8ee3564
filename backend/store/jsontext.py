"""The one way JSON values become stored text: compact, ASCII-only (lone surrogates survive), no NaN;
and, for trace documents, that text xz-compressed."""
import json
import lzma

# Preset 0 is the fastest xz: the worst accepted trace (28.5 MiB of JSON) packs to 1.17 MiB in 0.56 s and
# unpacks in 0.19 s on this 2-core machine; zlib -9 still leaves 2.2 MiB, preset 1 saves 4 % for twice the time.
XZ_PRESET = 0


def dump(value) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def load(text: str):
    return json.loads(text)


def columns(row, *names) -> dict:
    """{name: the value stored as text in row.<name>_json} for each name; a column a migration added is NULL in
    the rows written before it: None."""
    return {name: load(getattr(row, f"{name}_json") or "null") for name in names}


def compress(text: str) -> bytes:
    """Text written by `dump` (ASCII), xz-compressed."""
    return lzma.compress(text.encode("utf-8"), preset=XZ_PRESET)


def decompress(blob: bytes) -> str:
    return lzma.decompress(blob).decode("utf-8")
