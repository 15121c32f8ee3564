"""The base run indexed once: what every region predictor reads from an un-checkpointed document, engine or torch.

Our engine's predictor (backend/planner/timeline.py) and torch's (backend/planner/torch_timeline.py) re-time the
same records: the base steps, the storages' lifetimes, which block each forward entry belongs to and which
entries saved a tensor on each storage. Both read them from this one index, built once per base document.

A plannable document's forward entries come first on its tape, numbered 0, 1, ... in order (both recorders write
them so), so the per-entry columns here are lists indexed by entry.
"""
from dataclasses import dataclass

from backend.planner.blocks import BlockIndex


@dataclass
class BaseRun:
    """What the predictions read from the base document."""
    steps: list                 # (phase, entry) per base step
    storages: list              # storage records: id, nbytes, kind, born, freed, dropped, setup, extra?
    n_blocks: int
    entry_block: list           # forward entry -> block index or None
    entry_op: list              # forward entry -> op name
    entry_micro_batch: list     # forward entry -> its micro-batch (1 without accumulation)
    flops: list                 # forward entry -> FLOPs
    output_storage: dict        # forward entry -> storage id of its output
    savers: dict                # storage id -> forward entries that saved a tensor on it
    saving_entries: set         # forward entries that saved something
    saves_own_output: set       # ... whose last save is one of their own outputs (packed after the op)
    forward_step: dict          # forward entry -> its base step
    first_backward_step: dict   # forward entry -> the first and the last base step of its backward node
    last_backward_step: dict
    block_inputs: dict          # (micro-batch, block index) -> storage id entering it
    unrecorded_block: dict      # forward step with no entry (autocast's cast of x) -> (micro-batch, block)
    # A double backward (a gradient penalty): the first backward's vjps are recorded on the tape, and a second
    # sweep ("backward-2") runs through them and the forward. Empty / False for a single backward.
    double_backward: bool = False
    recorded_for: dict = None   # recorded entry -> the forward entry whose vjp recorded it (None: the penalty's)
    sweep_savers: dict = None   # storage id -> every entry that saved a tensor on it, recorded ones included
    last_sweep_step: dict = None    # entry -> the base step of its node in the last sweep that ran it
    sums_2: list = None         # backward-2's += at a node: (step, entry running, target tensor, part storages, total storage)
    tensor_producer: dict = None    # tensor id -> the entry that produced it
    storage_born_entry: dict = None     # storage id -> the entry at its birth step (None: no entry)
    # The records themselves, for selective recomputation's predictor (backend/planner/selective.py), which reads
    # tensors and entries where the region predictors read storages and blocks.
    tensors: dict = None        # tensor id -> its record
    tape: list = None           # every tape entry record (the forward's first, then a recorded backward's)
    sweep: list = None          # the sweep's items, in order
    sweep_steps: dict = None    # entry -> the base steps its node ran, one per sweep (two in a double backward)

    @classmethod
    def from_document(cls, document):
        paths = [block["path"] for block in document["blocks"]]      # as the run's driver reported them
        blocks = BlockIndex(paths)
        forward = [e for e in document["tape"] if e["phase"] == "forward"]
        if any(e["index"] != position for position, e in enumerate(forward)):
            raise ValueError("the base document's forward entries are not the tape's first entries in order; "
                             "the predictors index them by position")
        tensors = {t["id"]: t for t in document["tensors"]}
        storage_of = {uid: t["storage"] for uid, t in tensors.items()}
        steps = [(s["phase"], s["entry"]) for s in document["steps"]]
        forward_step, first_backward, last_backward, last_sweep = {}, {}, {}, {}
        n_forward = len(forward)
        for s, (phase, entry) in enumerate(steps):
            if phase == "forward" and entry is not None:
                forward_step.setdefault(entry, s)
            elif phase == "backward" and entry is not None and entry < n_forward:
                first_backward.setdefault(entry, s)
                last_backward[entry] = s
            if entry is not None and (phase == "backward-2" or phase == "backward" and entry < n_forward):
                last_sweep[entry] = s           # a recorded entry's step in backward is its op, not its node
        sweep_savers = {}
        for entry in document["tape"]:
            for uid in entry["saved"]:
                sweep_savers.setdefault(storage_of[uid], set()).add(entry["index"])
        sweep_steps = {}
        for item in document.get("sweep", ()):
            sweep_steps.setdefault(item["entry"], []).append(item["step"])
        savers = {}
        for entry in forward:
            for uid in entry["saved"]:
                savers.setdefault(storage_of[uid], set()).add(entry["index"])
        born_scope = {}             # step -> the scope of a tensor born there (an unrecorded op's output)
        for t in document["tensors"]:
            if t["produced_by"] is None and t.get("scope"):
                born_scope.setdefault(t["born"], t["scope"])
        unrecorded = {s["index"]: (s.get("micro_batch") or 1, blocks.block_of(born_scope[s["index"]]))
                      for s in document["steps"]
                      if s["phase"] == "forward" and s["entry"] is None and s["index"] in born_scope}
        return cls(
            steps=steps,
            storages=document["storages"],
            n_blocks=len(paths),
            entry_block=[blocks.block_of(e["scope"]) for e in forward],
            entry_op=[e["op"] for e in forward],
            entry_micro_batch=[e.get("micro_batch") or 1 for e in forward],
            flops=[e["flops"] for e in forward],
            output_storage={e["index"]: storage_of.get(e["output"]) for e in forward},
            savers=savers,
            saving_entries={e["index"] for e in forward if e["saved"]},
            saves_own_output={e["index"] for e in forward
                              if e["saved"] and tensors[e["saved"][-1]]["produced_by"] == e["index"]},
            forward_step=forward_step, first_backward_step=first_backward, last_backward_step=last_backward,
            block_inputs={(micro, b): storage for b, block in enumerate(document["blocks"])
                          for micro, storage in enumerate(block.get("micro_batch_inputs", [block["input_storage"]]),
                                                          start=1)},
            unrecorded_block=unrecorded,
            double_backward=any(phase == "backward-2" for phase, _ in steps),
            recorded_for={e["index"]: e.get("recorded_for") for e in document["tape"][n_forward:]},
            sweep_savers=sweep_savers, last_sweep_step=last_sweep,
            sums_2=[(item["step"], item["entry"], a["tensor"], [storage_of[p] for p in a["parts"]], storage_of[a["total"]])
                    for item in document.get("sweep", ()) if steps[item["step"]][0] == "backward-2"
                    for a in item.get("accumulations", ()) if a["into"] == "buffer"],
            tensor_producer={uid: t["produced_by"] for uid, t in tensors.items()},
            storage_born_entry={st["id"]: steps[st["born"]][1] for st in document["storages"]},
            tensors=tensors, tape=document["tape"], sweep=document.get("sweep", []), sweep_steps=sweep_steps,
        )

    def op_of(self, entry):
        """The op name of a forward entry, None for no entry."""
        return None if entry is None else self.entry_op[entry]
