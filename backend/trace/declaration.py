"""The trace document declared once: its records, their fields and types, and how version 2 writes each table.

Both schemas are generated from this module (`python -m backend.trace.schemas`, `make schemas`): the expanded form
(docs/trace.v1.schema.json, what every reader works on) and the packed form (docs/trace.schema.json, schema_version
2, what the server sends), and so is the page's column list (static/js/state/trace-columns.js, read by
trace-document.js beside it).
backend/trace/document_versions.py packs and unpacks by the same fields; tests/trace/test_declaration.py fails when a
generated file is not what this module makes, so an edit by hand to one of them does not survive.

How to add to the document, one edit each:
- a field: one `Field` in its record (`required=False` for anything older documents lack);
- a record: one `record(...)` and a `Field` that holds it (`table(...)` when version 2 writes it as columns);
- an enum value: one more value in its `enum(...)`; memory kinds in backend/trace/memory_kinds.py;
- a type many fields share: one `Named` (the schemas write it once, under $defs); a run of many documents (issue
  29's ranks) is a record whose field is an `array` of `Named("document", DOCUMENT)`.

The vocabulary (Field, record, table, Named, the type helpers) is backend/trace/declaration_types.py. A field's
`column` says how version 2 writes it when its record is a table (CODED, SCOPED, STATISTICS, NESTED; plain
otherwise) and `derived` when version 2 leaves it out because a reader derives it (each only when every row agrees).
"""
from backend.models.caps import cap
from backend.trace.declaration_types import (ANY, BOOL, CODED, COUNT, INT, INTS, NESTED, NUM, SCOPED, STATISTICS,
                                             STR, Derived, Field, Named, Table, Version, array, const, enum, flag,
                                             integer, mapping, nullable, number, one_of, optional, record, string,
                                             table)
from backend.trace.memory_kinds import MEMORY_KIND_NAMES, MEMORY_KINDS

# ------------------------------ the shared types ------------------------------
STEP = Named("step", integer(minimum=0))
MAYBE_STEP = Named("maybe_step", {"type": ["integer", "null"], "minimum": 0})
ADDRESS = Named("address", string(pattern="^0x[0-9a-f]+$"))
KIND = Named("kind", enum(*MEMORY_KIND_NAMES, description="what the bytes are for (backend/trace/memory_kinds.py): "
                          + "; ".join(f"{kind.name}, {kind.words}" for kind in MEMORY_KINDS)))
PHASE = Named("phase", enum("forward", "backward", "backward-2", "recompute", "optimizer", description=(
    "backward-2: the second backward of a double backward (a gradient penalty), through the tape the first backward "
    "recorded and the forward's; the first backward is then phase backward (recorded, create_graph)")))
# The kinds every document since version 1 counts at every step; a kind declared later is never required here,
# since documents stored before it lack it.
BY_KIND_ALWAYS = ("input", "param", "activation", "grad", "optimizer")
BY_KIND = Named("by_kind", mapping(COUNT, required=list(BY_KIND_ALWAYS), description=(
    "bytes per memory kind; weight_copy is present in traces of this engine (0 without mixed precision)")))
VALUE = Named("value", record(
    Field("min", ANY), Field("max", ANY), Field("mean", ANY), Field("norm", ANY),
    optional("f16", STR, "little-endian float16 values, base64, row-major")))
MICRO_BATCH = Named("micro_batch", integer(minimum=1, description=(
    "on steps and tape entries of a run with accumulate > 1: which micro-batch's forward or backward (1-based); "
    "optimizer steps have none")))
FLOPS_SOURCE = Named("flops_source", enum("torch", "tapescope"))
FLOPS_BY_SOURCE = Named("flops_by_source", mapping(COUNT, propertyNames=FLOPS_SOURCE))
WRITE = record(Field("step", STEP), Field("version", INT), optional("scope", nullable(STR)))     # an in-place write


# ------------------------------ the tables ------------------------------
STORAGES = table(
    Field("id", INT),
    Field("address", ADDRESS),
    optional("scope", STR, "the layer path that owns it (an activation's op, a parameter's module, a grad's or "
                           "optimizer buffer's parameter), or input / loss / model", column=SCOPED),
    Field("nbytes", COUNT),
    Field("kind", KIND, column=CODED),
    Field("born", STEP),
    Field("freed", MAYBE_STEP),
    optional("saved_for_backward_2", const(True), (
        "double backward only: allocated by a vjp op recorded during the first backward (create_graph) and saved by "
        "an entry, so it lives until backward-2 reaches that entry: the first backward's intermediates saved for the "
        "second")),
    optional("dropped", MAYBE_STEP, (
        "the step during which the last Tensor over it went (the program dropped it); freed is when the storage "
        "itself went, later when autograd still held it for backward; null when a Tensor outlived the step")),
    flag("setup", "true when it was allocated before the first step (the model's setup: inputs, parameters)"),
    flag("extra", "true on an array an op's forward computed for its backward (a mask, a statistic): held by the "
                  "tape only, never by a Tensor"),
)

TENSORS = table(
    Field("id", INT),
    Field("name", STR),
    Field("kind", KIND, column=CODED),
    Field("shape", array(COUNT)),
    Field("dtype", STR, column=CODED),
    Field("nbytes", COUNT, derived=Derived("storage", "nbytes")),
    Field("storage", INT),
    Field("address", ADDRESS, derived=Derived("storage", "address")),
    Field("born", STEP),
    Field("freed", MAYBE_STEP),
    Field("saved_by", INTS),
    optional("produced_by", nullable(INT)),
    optional("scope", nullable(STR), column=SCOPED),
    optional("grad_of", INT),
    optional("view", BOOL),
    optional("value", VALUE, column=STATISTICS, packed_description=(
        "[min, max, mean, norm] with the base64 little-endian float16 values fifth when carried; optional (null: no "
        "value)")),
    optional("underflow", record(
        Field("unscaled", number(minimum=0, maximum=1)), Field("scaled", number(minimum=0, maximum=1)),
        description=("on a master gradient under mixed precision: the fraction of its elements that are nonzero in "
                     "float32 but become 0 in float16, as they are (unscaled) and multiplied by the loss scale "
                     "(scaled)"))),
    optional("frozen", const(True), "a parameter of a frozen layer: requires_grad False, so no grad and no optimizer "
                                    "state"),
    optional("versions", array(WRITE),
             "in-place writes to this tensor: the step, the storage's version after it and the layer scope that "
             "wrote it"),
    optional("dropped", ANY, "our engine's runs: the step during which the program dropped this Tensor (absent: it "
                             "outlived the run)"),
    flag("buffer", "imported runs: true on a module's registered buffer (kind param)"),
)

TAPE = table(
    Field("index", integer(minimum=0), derived=Derived("row")),
    Field("op", STR, column=CODED),
    Field("family", STR, derived=Derived("op", "family")),
    Field("backward", STR, derived=Derived("op", "backward")),
    Field("inputs", INTS),
    Field("output", nullable(INT)),
    Field("saved", INTS),
    Field("flops", COUNT),
    optional("flops_source", FLOPS_SOURCE, (
        "whose count flops is, in an imported run: torch (torch.utils.flop_counter's formula for the op, as "
        "FlopCounterMode counts it: mm family, convolution, attention kernels) or tapescope (ours, for ops torch has "
        "no formula for). Absent in our engine's documents (its registry's count)")),
    Field("scope", STR, column=SCOPED),
    Field("why", STR, derived=Derived("op", "why")),
    optional("attrs", {"type": "object"}),
    Field("phase", PHASE, column=CODED),
    optional("recorded_in", const("backward"), (
        "double backward only: a vjp's own op, recorded during the first backward because it ran with create_graph "
        "(the second tape; its scope starts with \"backward (recorded)\"). Absent on the forward's entries and on ops "
        "the model ran itself (the gradient penalty)")),
    optional("recorded_for", integer(minimum=0), "with recorded_in: the entry whose vjp recorded it"),
    optional("micro_batch", MICRO_BATCH),
    optional("recompute", ANY, "a forward entry's verdict {ok, reason}: whether a checkpoint may recompute its "
                               "output, and if not why not", column=CODED),
)

STEPS = table(
    Field("index", STEP, derived=Derived("row")),
    Field("phase", PHASE, column=CODED),
    Field("entry", nullable(INT)),
    Field("live_bytes", COUNT, derived=Derived("sum", "by_kind")),
    Field("by_kind", BY_KIND, column=NESTED,
          packed_description="one column of live bytes per kind; a step's live_bytes is their sum"),
    optional("param", INT),
    optional("recorded_backward_bytes", COUNT, "double backward only: the live bytes of storages marked "
                                               "saved_for_backward_2 (part of live_bytes)"),
    optional("micro_batch", MICRO_BATCH),
    optional("reserved_bytes", COUNT, (
        "imported with --allocator: the bytes PyTorch's CUDA caching allocator would hold from the device after this "
        "step (torch.cuda.memory_reserved()), its rules replayed on the storages (backend/trace/cuda_allocator.py); "
        "never below live_bytes")),
    optional("autocast", enum("float16", "bfloat16", "float32"), (
        "an unrecorded forward step (entry null) that is autocast's cast of an input needing no gradient (the input "
        "x, a frozen parameter): the dtype it casts to. Absent on every other step")),
    optional("op", ANY, "an unrecorded step's op (a checkpoint's forward, autocast's cast)", column=CODED),
    flag("recorded", "false on an unrecorded step"),
    flag("continues", "imported runs: true on a step that goes on with its node's work (after an op it dispatched, "
                      "or after a checkpoint's recompute)"),
)

SWEEP = table(
    Field("step", STEP),
    Field("entry", INT),
    Field("op", ANY, derived=Derived("entry", "op")),
    Field("backward", ANY, derived=Derived("entry", "backward")),
    Field("adjoint", one_of({"type": "null"}, {"allOf": [VALUE, {"type": "object", "required": ["tensor", "shape"]}]}),
          column=STATISTICS, packed_description="null, or [min, max, mean, norm, f16 or null, {tensor, shape}]"),
    Field("reads", INTS, derived=Derived("entry", "saved")),
    Field("why", ANY, derived=Derived("entry", "why")),
    Field("contributions", array(record(Field("to", ANY), Field("grad", ANY), Field("shape", ANY)))),
    Field("accumulations", array(record(Field("tensor", ANY), Field("parts", ANY), Field("total", ANY),
                                        Field("into", enum("buffer", "grad"))))),
    Field("freed", INTS),
    Field("ready", INTS),
    Field("pending", mapping(integer(minimum=1))),
    optional("flops", COUNT, "imported runs: the FLOPs of the aten ops this node ran in backward (a checkpoint's "
                             "recompute included, in the node that started it)"),
    optional("flops_by_source", FLOPS_BY_SOURCE, "imported runs: flops split by whose count it is (sources with none "
                                                 "left out)"),
)


# ------------------------------ the rest of the document ------------------------------
SPEC = record(
    Field("name", ANY), Field("seed", ANY), Field("dtype", ANY), Field("batch", ANY), Field("input", ANY),
    Field("layers", ANY), Field("loss", ANY),
    Field("optimizer", one_of(
        record(Field("type", const("none"))),
        record(Field("type", const("sgd")), Field("lr", number(minimum=0)),
               Field("momentum", number(minimum=0, exclusiveMaximum=1)), Field("weight_decay", number(minimum=0)),
               Field("nesterov", BOOL)),
        record(Field("type", enum("adam", "adamw", "adam8bit", description=(
                   "adam8bit: Adam over int8 m and v, one float32 absmax/127 scale per 2,048-element block"))),
               Field("lr", number(minimum=0)),
               Field("betas", array(number(minimum=0, exclusiveMaximum=1), minItems=2, maxItems=2)),
               Field("weight_decay", number(minimum=0))),
        record(Field("type", const("other")), Field("name", STR),
               description="an imported run's optimizer we have no spec for (torch.optim.RMSprop, ...)"),
    ), description="normalized by backend/models/spec.py with torch.optim's defaults (docs/api.md)"),
    optional("accumulate", integer(minimum=1), "micro-batches per optimizer step (absent: 1); each runs forward and "
                                               "backward on batch/accumulate rows"),
    optional("precision", record(
        Field("compute", enum("float16", "bfloat16")),
        Field("loss_scale", one_of(enum("dynamic", "none"), number(minimum=1))),
        Field("growth_interval", integer(minimum=1)),
        description=("mixed precision: float32 master weights, the forward under autocast in `compute`, float32 "
                     "master grads unscaled by the loss scaler"))),
)

SOURCE = record(
    Field("kind", const("torch")),
    Field("torch_version", STR),
    Field("model", STR, "the nn.Module's class name"),
    optional("loss", STR),
    optional("optimizer", nullable(STR)),
    optional("values", BOOL, "true when small tensors carry their values (--values)"),
    optional("fake", record(
        Field("world_size", INT, "the fake process group's ranks (1: none); the document is rank 0's"),
        description=("recorded under FakeTensorMode (--fake): shapes, dtypes, bytes and lifetimes of the real code, "
                     "no values (no statistics, loss null) and no memory; storage addresses are the storages' own, "
                     "not data pointers"))),
    description=(
        "Where an imported run came from (absent for our own engine's runs): kind torch is one real training step "
        "recorded by backend/importers/torch.py with PyTorch's hooks. Such a document is read-only: its spec "
        "describes the run (spec.input.kind torch, spec.seed null) and cannot be re-traced. Its storage addresses are "
        "the real data_ptr()s (an address can recur after the allocator reuses it; ids never do), its ops are aten "
        "ops, its scopes are module paths, and values carry statistics only unless the run was recorded with "
        "--values."),
)

CUT = record(
    Field("path", STR, "the layer's scope: layers[2], or layers[0][3][1] inside a repeat"),
    Field("type", enum("detach", "no_grad")),
    optional("tensor", INT, "detach only: the detached tensor's id"),
    Field("entries", COUNT),
    Field("saved_bytes", COUNT),
    Field("tensors", COUNT),
)

ERROR = record(
    Field("phase", const("backward")),
    Field("step", STEP),
    Field("entry", INT),
    Field("op", STR),
    Field("backward", STR),
    Field("message", STR),
    Field("writes", array(record(Field("tensor", INT), Field("step", STEP), Field("version", INT),
                                 Field("scope", nullable(STR))))),
    Field("fix", STR),
    nullable=True,
    description=(
        "null, or where backward stopped: the engine raised torch's version-counter RuntimeError (an in-place op "
        "overwrote a tensor an earlier op saved). The trace runs up to that step: `step` is the last of `steps`, the "
        "node whose saved tensors failed their version check; `message` is the engine's exact text; `writes` the "
        "in-place writes to the tensors that entry saved; `fix` the way out in words. No optimizer step follows."),
)

GRAPH = record(
    Field("nodes", array(record(*(Field(name, ANY) for name in ("id", "entry", "op", "family", "scope"))))),
    Field("leaves", array(record(*(Field(name, ANY) for name in ("id", "tensor", "kind", "name"))))),
    Field("edges", array(record(*(Field(name, ANY) for name in ("source", "target", "tensor", "nbytes"))))),
)

HOLDER = record(Field("scope", STR), Field("kind", KIND), Field("bytes", COUNT), Field("storages", INTS),
                Field("tensors", INTS))

SUMMARY = record(
    Field("peak_bytes", COUNT),
    Field("peak_step", STEP),
    Field("saved_bytes", COUNT, (
        "The most bytes of unique storages the forward tape holds for backward at once, parameters included, each "
        "storage held from the forward step that first saves it to the last backward step that reads it: for one "
        "micro-batch, everything it saved (alive together at the end of forward, saved_tensors_hooks' count); with "
        "accumulate, the largest micro-batch's, since each backward frees its saves before the next forward; on a "
        "pipeline stage, its micro-batches in flight. Never above peak_bytes.")),
    Field("by_kind_at_peak", BY_KIND),
    optional("by_kind_at_end", BY_KIND, (
        "live bytes by kind after the last step: what the next training step starts from (params, grads, optimizer "
        "state: SGD momentum one buffer per param, Adam/AdamW m and v two)")),
    Field("measured_peak_bytes", nullable(INT)),
    optional("recorded_backward", record(
        Field("entries", integer(minimum=1)), Field("saved_bytes", COUNT), Field("peak_saved_bytes", COUNT),
        description=("double backward only (a spec with loss.gradient_penalty): the tape entries recorded by the "
                     "first backward's vjps, the bytes of the storages they saved for backward-2, and the most of "
                     "them alive at one step"))),
    optional("peak", record(
        Field("step", STEP),
        Field("phase", PHASE),
        Field("live_bytes", COUNT),
        Field("by_kind", BY_KIND),
        Field("holders", array(HOLDER)),
        Field("verdict", STR),
        optional("recomputed_bytes", COUNT, "activation bytes alive at the peak that were recomputed in backward"),
        optional("param_grad_bytes", COUNT, ("of by_kind.grad, the parameters' own gradients (.grad); the rest are "
                                             "activations' gradients backward is passing along")),
        optional("checkpointed", BOOL),
        optional("recorded_backward_bytes", COUNT, (
            "double backward only: bytes alive at the peak that are the first backward's intermediates saved for the "
            "second (the verdict attributes them)")),
        description=("Why the peak is where it is: the storages alive at peak_step grouped by scope x kind (largest "
                     "first; their bytes sum to peak_bytes), and one sentence naming where the peak is and what "
                     "holds it"))),
    optional("reserved_peak_bytes", COUNT, "imported with --allocator: the most reserved_bytes of any step"),
    optional("reserved_peak_step", STEP, "imported with --allocator: the first step holding reserved_peak_bytes"),
    optional("allocator", record(
        Field("rules", const("cuda")),
        Field("expandable_segments", BOOL),
        Field("allocated_peak_bytes", COUNT),
        Field("allocated_peak_step", STEP),
        Field("inactive_at_reserved_peak_bytes", COUNT),
        Field("largest_free_at_reserved_peak_bytes", COUNT),
        Field("segments_made", COUNT),
        description=("imported with --allocator: the simulated CUDA caching allocator (docs/trace.md, Reserved and "
                     "allocated): whether expandable_segments was on, the peak of allocated bytes (each storage "
                     "rounded up to its block, torch.cuda.memory_allocated()), at the reserved peak the bytes "
                     "reserved but not allocated and the largest free cached block, and how many segments "
                     "(cudaMalloc calls, or expandable segments) it made"))),
    optional("forward_flops", COUNT, "the forward tape entries' flops, summed"),
    optional("backward_flops", COUNT, "imported runs: the sweep's flops, summed (every node's backward ops)"),
    optional("flops_by_source", FLOPS_BY_SOURCE, (
        "imported runs: the forward's and the backward's FLOPs by whose count they are; its torch part is what "
        "torch.utils.flop_counter.FlopCounterMode counts over the same step")),
    optional("micro_batches", integer(minimum=1), (
        "the spec's accumulate: how many forward/backward pairs ran before the one optimizer step")),
    optional("plan_refusal", nullable(string(maxLength=1000)), (
        "why the planner refuses a checkpoint of this run's spec, as the 400's checkpoint problem says it (a "
        "predicate read after \"checkpoint\"), or null when it plans one; absent in documents recorded elsewhere (a "
        "torch run.json) or before the field")),
    optional("resident", record(
        Field("params", COUNT), Field("master_weights_bytes", COUNT), Field("weight_copies_bytes", COUNT),
        Field("grads_bytes", COUNT), Field("optimizer_state_bytes", COUNT),
        Field("bytes_per_param", nullable(NUM)),
        description=("the training state by part: master weights, grads and optimizer state after the last step "
                     "(what the next step starts from), the most bytes of low-precision weight copies alive at once "
                     "(they live from forward to the backward that reads them), and the persistent bytes per "
                     "parameter element (16 for fp32 Adam, 10 plus the block scales for adam8bit)"))),
    optional("loss_scale", record(
        Field("mode", enum("dynamic", "fixed", "none")),
        Field("scale", NUM),
        Field("next_scale", NUM),
        Field("growth_interval", INT),
        Field("growth_tracker", COUNT),
        Field("found_inf", BOOL),
        Field("skipped_step", BOOL),
        nullable=True,
        description=("the loss scaler's step under mixed precision (null without): the scale the loss was multiplied "
                     "by, the scale after the policy's update (x2 after growth_interval clean steps, /2 on inf/NaN), "
                     "its clean-step count, whether a gradient held an inf/NaN and so the optimizer step was "
                     "skipped"))),
)

CHECKPOINTING = record(
    Field("recompute", enum("on_first_unpack")),
    optional("early_stop", BOOL),
    description=(
        "How a checkpoint of this run recomputes, which the planner's predictor follows: an imported torch run says "
        "on_first_unpack (torch.utils.checkpoint with use_reentrant=False re-runs a region inside the first of its "
        "backward nodes that unpacks a saved tensor, and with early_stop ends the recompute at the region's last "
        "save). Absent for our engine's runs, which recompute right after the checkpoint node's step."),
)

BLOCK = record(
    Field("path", string(maxLength=512)),
    Field("input_storage", COUNT),
    optional("micro_batch_inputs", array(COUNT, maxItems=4096), (
        "under accumulate > 1: the storage that entered the block in each micro-batch, the first's (input_storage) "
        "included")),
    optional("entries", COUNT, "the forward tape entries inside the block (torch runs)"),
)

SCHEDULE = record(
    Field("policy", string(maxLength=32)),
    optional("params", {"type": "object"}),
    Field("executed_peak_bytes", {"type": ["integer", "null"], "minimum": 0}),
    Field("predicted_peak_bytes", COUNT),
    optional("executed_backward_peak_bytes", COUNT),
    optional("predicted_backward_peak_bytes", COUNT),
    optional("predicted_error", NUM),
    Field("overhead", number(minimum=0)),
    optional("recompute_flops", COUNT),
    optional("grads_match", nullable(BOOL)),
    optional("executed_by", string(maxLength=64), "who ran the schedule when not our engine: torch and its version"),
    optional("regions", array(array(STR))),
    optional("verdict", STR),
)

# Version 2's own: what it writes once and the columns refer to (the op text is the tape's fields derived from it).
OPS = mapping(record(*(Field(field.name, field.type) for field in TAPE.record.fields
                       if field.derived and field.derived.how == "op")),
              description=("per op name, the text every tape entry of that op shares: its family, backward name and "
                           "why it saves what it saves. Absent when some entries of an op disagree (the tape then "
                           "keeps those columns)."))

# The document, field by field. Its tables are in the order version 2 packs them (a tensor reads its storage, a sweep
# item its tape entry; scopes are numbered in this order).
DOCUMENT = record(
    Field("schema_version", Version()),
    Field("engine_version", STR),
    Field("spec", SPEC),
    optional("source", SOURCE),
    optional("loss", nullable(NUM), "null when the loss is not finite; loss_text says what it was"),
    optional("loss_text", STR),
    optional("layers", array(record(Field("path", ANY), Field("type", ANY), Field("name", ANY)))),
    Field("scopes", array(STR, uniqueItems=True), packed_only=True, description=(
        "every scope (layer path) once, first seen first; scope columns hold an index into it (null stays null)")),
    optional("ops", OPS, packed_only=True),
    Field("storages", STORAGES),
    Field("tensors", TENSORS),
    Field("tape", TAPE),
    Field("sweep", SWEEP),
    Field("steps", STEPS),
    optional("dependencies", mapping(COUNT)),
    optional("cuts", array(CUT), (
        "Where the model's detach and no_grad layers cut the graph, in forward order. `entries` counts the tape "
        "entries recorded inside (0 under no_grad: the ops ran, `tensors` of them were allocated, nothing was "
        "recorded) and `saved_bytes` what those entries saved (0 under no_grad); a detach is a view with no entry of "
        "its own, `tensor` its output (a leaf in the graph).")),
    optional("error", ERROR),
    Field("graph", GRAPH, derived=Derived("graph"), packed_description=(
        "present only when it is not the graph a reader derives from the tape and the tensors (nodes: one per entry; "
        "leaves: tensors no entry produced, in order of first use; edges: one per entry input)")),
    Field("summary", SUMMARY),
    optional("checkpointing", CHECKPOINTING),
    optional("blocks", array(BLOCK, maxItems=4096), (
        "What checkpoint schedules count as blocks, in the order the forward entered them: each block's path (our "
        "layers[i], or a torch module path) and the storage that entered it (what a checkpoint of it keeps).")),
    optional("schedules", array(SCHEDULE, maxItems=64), (
        "Checkpoint schedules of this model, each executed: our engine's planner attaches every heuristic; an "
        "imported torch run carries the what-ifs run with --checkpoint, each with torch's measured peak "
        "(executed_peak_bytes, executed_by) beside our planner's prediction from the un-checkpointed document "
        "(predicted_peak_bytes, predicted_error = (predicted - executed) / executed), and the same pair for the "
        "steps before the optimizer's update (*_backward_peak_bytes).")),
    optional("schedule", ANY, "a checkpointed trace (POST /api/trace with checkpoint): the schedule that ran"),
    optional("pareto", ANY, "a checkpointed trace: the budget sweep, the non-dominated (peak, recompute FLOPs) "
                            "points of the planner's heuristics"),
    optional("checkpoint_regions", ANY, "an imported run that checkpoints itself: each region's forward entries "
                                        "[first, end), where its recompute ran and the recompute's entries and steps"),
    description=("One run of a model on the tape: forward, backward (and recompute), optimizer. Steps are numbered "
                 "across phases; a tensor or storage is alive at step s iff born <= s <= freed (freed null: alive at "
                 "the end)."),
)


# ------------------------------ the packed layout (document_versions.py, the page) ------------------------------
def _tables():
    return {field.name: field.type.record for field in DOCUMENT.fields if isinstance(field.type, Table)}


TABLE_RECORDS = _tables()
TABLES = tuple(TABLE_RECORDS)


def columns_of(column):
    """{table: (field, ...)} of the fields version 2 writes as `column` (CODED, SCOPED, STATISTICS, NESTED)."""
    return {name: tuple(field.name for field in rec.fields if field.column == column)
            for name, rec in TABLE_RECORDS.items()}


def derived_fields():
    """{table: {field: Derived}} of what version 2 leaves out when every row agrees with its derivation."""
    return {name: {field.name: field.derived for field in rec.fields if field.derived}
            for name, rec in TABLE_RECORDS.items()}


PACKED_ONLY = tuple(field.name for field in DOCUMENT.fields if field.packed_only)      # scopes, ops
OP_TEXT = tuple(field.name for field in TAPE.record.fields if field.derived and field.derived.how == "op")
STATISTICS_FIELDS = tuple(field.name for field in VALUE.type.fields if field.required)     # min, max, mean, norm
STATISTICS_AND_VALUES = tuple(field.name for field in VALUE.type.fields)                    # ... and f16


# ------------------------------ a run of many ranks ------------------------------
RUN = record(
    Field("world_size", integer(minimum=1), "how many ranks ran the step: the length of ranks"),
    Field("ranks", array(DOCUMENT, minItems=1, maxItems=cap("ranks")), (
        "every rank's trace document, rank 0 first: each a full document (schema_version 2, as the command line "
        "writes it) with its own rank, world_size and mesh")),
    additionalProperties=False,
    description=(
        "A run of many ranks, as `python -m backend.importers.torch MODEL_FILE --nproc N` (or torchrun) writes it: "
        "the object has no schema_version of its own; each rank's document has. backend/trace/intake.py checks this "
        "record's fields and each rank's document as one posted alone; backend/trace/schemas.py renders it as "
        "docs/trace-run.schema.json."),
)
