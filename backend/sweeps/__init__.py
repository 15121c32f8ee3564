"""Forward vs reverse mode on a model: full Jacobians built by n JVP or m VJP sweeps, each sweep metered by the
engine's own counters (FLOPs from the op registry, bytes from its allocation events); a JVP sweep stepped entry by
entry; and the matrix-chain lesson executed at small widths. The API (backend/api/modes.py) serves these."""
