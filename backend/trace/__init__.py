"""Traces: the recorder that listens to the engine and the document it builds (the browser's contract)."""
from backend.trace.document import SCHEMA_VERSION
from backend.trace.run import trace_spec

__all__ = ["SCHEMA_VERSION", "trace_spec"]
