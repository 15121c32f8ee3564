"""The memory kinds: what each byte a run holds is for, declared once.

Every storage in a trace document has one of these kinds; the document counts live bytes per kind at every step,
the peak's sentence names them in these words, the trace schemas enumerate them and the page colours them
(static/js/lib/palette.js, checked against this list by tests/trace/test_memory_kinds.py). A new kind (an importer's
memory no tensor owns, a rank's collective buffers) is added here, and the checks say where else it must go.
"""
from typing import NamedTuple


class MemoryKind(NamedTuple):
    name: str
    words: str                  # what the peak's sentence calls it
    singular: bool = False      # its words are one thing: "optimizer state dominates", not "dominate"
    sharding: bool = False      # memory only a rank's sharding holds, never a single process: also a storage's role


MEMORY_KINDS = (
    MemoryKind("input", "the input batch", singular=True),
    MemoryKind("param", "the parameters"),
    MemoryKind("weight_copy", "the weights' low-precision copies"),    # autocast's casts, saved by the ops reading them
    MemoryKind("activation", "activations"),
    MemoryKind("grad", "gradients"),
    MemoryKind("optimizer", "optimizer state", singular=True),
    # an imported run's kernel workspace, from torch.profiler
    MemoryKind("workspace", "memory no tensor owns", singular=True),
    # a rank's sharding (backend/importers/torch_collectives.py): memory a single process never holds; its parameter
    # and gradient shards and DDP's buckets stay param and grad (they are the rank's parameters and gradients)
    MemoryKind("unsharded_param", "all-gathered (unsharded) parameters", sharding=True),
    MemoryKind("unsharded_grad", "unsharded gradients waiting for their reduce-scatter", sharding=True),
    MemoryKind("comm_buffer", "communication buffers", sharding=True),
)

MEMORY_KIND_NAMES = tuple(kind.name for kind in MEMORY_KINDS)
MEMORY_KIND_WORDS = {kind.name: kind.words for kind in MEMORY_KINDS}
SHARDING_KINDS = tuple(kind.name for kind in MEMORY_KINDS if kind.sharding)     # a rank's: unsharded_param, ...
SINGULAR_KINDS = frozenset(kind.name for kind in MEMORY_KINDS if kind.singular)
