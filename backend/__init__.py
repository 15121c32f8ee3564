"""Tapescope's backend: the tape engine, model specs, traces, planner, ledger, storage and web API."""
