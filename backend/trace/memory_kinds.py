"""The memory kinds: what each byte a run holds is for, declared once.

Every storage in a trace document has one of these kinds; the document counts live bytes per kind at every step,
the peak's sentence names them in these words, the trace schemas enumerate them and the page colours them
(static/js/lib/palette.js, checked against this list by tests/trace/test_memory_kinds.py). A new kind (an importer's
memory no tensor owns, a rank's collective buffers) is added here, and the checks say where else it must go.
"""
from collections import namedtuple

MemoryKind = namedtuple("MemoryKind", "name words")

MEMORY_KINDS = (
    MemoryKind("input", "the input batch"),
    MemoryKind("param", "the parameters"),
    MemoryKind("weight_copy", "the weights' low-precision copies"),    # autocast's casts, saved by the ops reading them
    MemoryKind("activation", "activations"),
    MemoryKind("grad", "gradients"),
    MemoryKind("optimizer", "optimizer state"),
    MemoryKind("workspace", "memory no tensor owns"),       # an imported run's kernel workspace, from torch.profiler
    # a rank's sharding (backend/importers/torch_collectives.py): memory a single process never holds; its parameter
    # and gradient shards and DDP's buckets stay param and grad (they are the rank's parameters and gradients)
    MemoryKind("unsharded_param", "all-gathered (unsharded) parameters"),
    MemoryKind("unsharded_grad", "unsharded gradients waiting for their reduce-scatter"),
    MemoryKind("comm_buffer", "communication buffers"),
)

MEMORY_KIND_NAMES = tuple(kind.name for kind in MEMORY_KINDS)
MEMORY_KIND_WORDS = {kind.name: kind.words for kind in MEMORY_KINDS}
