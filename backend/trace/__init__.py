"""Traces: the recorder that listens to the engine and the document it builds (the browser's contract).

A request (spec, checkpoint) becomes a document through backend/driver.py, which calls this package and the
planner; neither of them imports the other's caller.
"""
from backend.trace.document_versions import CURRENT_VERSION as SCHEMA_VERSION
from backend.trace.document_versions import upgrade

__all__ = ["SCHEMA_VERSION", "upgrade"]
