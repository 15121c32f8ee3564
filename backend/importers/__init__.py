"""Importers: record a run from another framework into the trace document. Torch is imported only inside
backend.importers.torch (and its helpers), never by `import backend` or the app."""
