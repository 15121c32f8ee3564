"""Models that checkpoint themselves (torch.utils.checkpoint with use_reentrant=False, HF's
gradient_checkpointing_enable()): checkpoint's own saved-tensor hooks, watched by the recorder without unpacking.

Inside a region, torch.utils.checkpoint packs each saved tensor as a placeholder (a `_Holder`) and its unpack
re-runs the region; outside a backward, every unpack re-runs it again (a fresh graph-task id each time). So the
recorder must never unpack a holder to learn what a node saves. Instead, while a step is recorded,
`watching_checkpoints` swaps checkpoint's two hook classes for subclasses that tell the recorder:

- a region's start and end in forward (the hook's __enter__/__exit__): its entries are marked `checkpoint_region`;
- each forward save (the pack hook sees the tensor a plain step would have kept);
- an unpack: read while the recorder probes a node's `_saved_*`, the holder names the forward tensor (listed in
  the entry's `recomputes`, as our engine lists a saved value kept as a recipe) and a placeholder is handed back,
  so nothing re-runs; in backward, the unpack that starts the region's recompute switches the recorder to the
  "recompute" phase, whose ops are tape entries and steps of that phase, as our engine's checkpointed traces
  have them, inside the backward node that triggered it (torch's order, not our engine's);
- each save of the recompute (the recomputation hook's pack), attributed to the recompute entry that saves it.

`CheckpointRegions` is the recorder's half (TorchRecorder inherits it); the hooks are restored on the way out.
"""
import weakref
from contextlib import contextmanager

import torch
import torch.utils.checkpoint as torch_checkpoint

from backend.importers.torch_ops import TAPESCOPE, aten_name, family, flops, op_info, op_name, op_tensors
from backend.trace.records import entry_record


@contextmanager
def watching_checkpoints(recorder):
    """Within: every non-reentrant checkpoint's hooks report to `recorder` (a CheckpointRegions)."""
    region_hook, recomputation_hook = torch_checkpoint._checkpoint_hook, torch_checkpoint._recomputation_hook

    class WatchedRegion(region_hook):
        def __init__(self, frame):
            super().__init__(frame)
            pack, unpack = self.pack_hook, self.unpack_hook
            self.frame = frame
            self.pack_hook = lambda tensor: recorder.region_pack(frame, tensor, pack(tensor))
            self.unpack_hook = lambda holder: recorder.region_unpack(frame, holder, unpack)

        def __enter__(self):
            recorder.region_begin(self.frame)
            super().__enter__()

        def __exit__(self, *exc):
            super().__exit__(*exc)
            recorder.region_end(self.frame)

    class WatchedRecomputation(recomputation_hook):
        def __init__(self, frame_ref, gid):
            super().__init__(frame_ref, gid)
            pack = self.pack_hook

            def noted(tensor):
                frame = frame_ref()
                position = frame.recomp_counter[gid] if frame is not None else None
                if frame is not None and position < len(frame.weak_holders):
                    recorder.recompute_pack(frame.weak_holders[position](), tensor)
                with recorder.unrecorded():         # its detach() is checkpoint's bookkeeping, not the model's
                    return pack(tensor)
            self.pack_hook = noted

    torch_checkpoint._checkpoint_hook, torch_checkpoint._recomputation_hook = WatchedRegion, WatchedRecomputation
    try:
        yield
    finally:
        torch_checkpoint._checkpoint_hook, torch_checkpoint._recomputation_hook = region_hook, recomputation_hook


class CheckpointRegions:
    """The recorder's side: `checkpoint_regions` (one record per region, in forward order), the forward entries
    each region holds, and the recompute phase's entries. Reads and writes TorchRecorder's tape and steps."""

    def _init_regions(self):
        self.checkpoint_regions = []
        self._region_of_frame = weakref.WeakKeyDictionary()     # checkpoint frame -> region record
        self._open_regions = []                                 # regions whose forward is running
        self._holders = weakref.WeakKeyDictionary()             # holder -> {"tensor": forward uid, "entry": saver}
        self._recomputing = []                                  # regions being recomputed (nested: innermost last)

    # ----- forward ---------------------------------------------------------------------------------
    def region_begin(self, frame):
        if self.phase != "forward":
            return
        region = {"index": len(self.checkpoint_regions), "scope": self.scope, "entries": [len(self.tape), None],
                  "recomputed_in": None, "recompute_entries": [], "recompute_steps": [], "_cursor": 0,
                  "_recomputed": {}, "_pending": [], "_reads": {}}
        self.checkpoint_regions.append(region)
        self._region_of_frame[frame] = region
        self._open_regions.append(region)

    def region_end(self, frame):
        region = self._region_of_frame.get(frame)
        if region is None or region not in self._open_regions:
            return
        self._open_regions.remove(region)
        region["entries"][1] = len(self.tape)
        for entry in self.tape[region["entries"][0]:region["entries"][1]]:
            entry.setdefault("checkpoint_region", region["index"])    # a nested region's entries stay its own

    def region_pack(self, frame, tensor, holder):
        """A save inside a region in forward: checkpoint keeps a placeholder; we note which tensor it stands for."""
        if self.phase == "forward":
            with self.unrecorded():
                uid = self.known(tensor, "activation", None, scope=self.scope)
            self._holders[holder] = {"tensor": uid, "entry": None}
        return holder

    def region_unpack(self, frame, holder, unpack):
        if self._probe is not None:         # attach() reading a node's saves: never re-run the region for it
            noted = self._holders.get(holder)
            if noted is not None:
                noted["entry"] = self._probe[0]
                self._probed(noted["tensor"], "recomputes", "recomputed_by")
            return _PLACEHOLDER
        region = self._region_of_frame.get(frame)
        if region is None or self.phase != "backward" or region["recomputed_in"] is not None:
            return unpack(holder)
        return self._recompute(region, holder, unpack)

    # ----- backward: the recompute, where torch runs it ----------------------------------------------
    def _recompute(self, region, holder, unpack):
        """The first unpack of a region's saves in backward: torch re-runs the region now, inside this node."""
        node_entry = self.sweep[-1]["entry"] if self.sweep else None
        region["recomputed_in"] = node_entry
        self._recomputing.append(region)
        self.phase = "recompute"
        depth = len(self._scopes)
        try:
            return unpack(holder)
        finally:
            del self._scopes[depth:]        # early stop raises out of a module's forward: its post-hook never ran
            self._recomputing.pop()
            self.phase = "recompute" if self._recomputing else "backward"
            self._settle_saves(region)
            if region["recompute_entries"] and not self._recomputing:
                self._new_step(node_entry, continues=True)     # the node's own work after the recompute
            if self.sweep:
                self.sweep[-1]["recomputes"] = region["index"]

    def recompute_op(self, func, args, kwargs):
        """One op of a region's recompute: a tape entry and step of phase "recompute", standing for the forward
        entry it re-runs (`recompute_of`); its outputs are named after the forward's, "(recomputed)"."""
        region = self._recomputing[-1]
        name = op_name(func)
        original = self._forward_twin(region, name)
        if original is None and func in _BOOKKEEPING:       # checkpoint unpacking the region's inputs
            return func(*args, **kwargs)
        index = len(self.tape)
        inputs = op_tensors(args) + op_tensors(tuple(kwargs.values()))
        scope = self.tape[original]["scope"] if original is not None else self.scope
        entry = entry_record(index, name, family(name), "", [self.known(t, "activation", None) for t in inputs], scope,
                             0, f"recomputed in backward: checkpoint region {region['index']} re-runs its forward",
                             {"aten": aten_name(func)}, "recompute", flops_source=TAPESCOPE, recompute_of=original,
                             checkpoint_region=region["index"])
        if original is not None:
            entry["backward"] = self.tape[original]["backward"]
            region["_recomputed"][original] = index
        self.tape.append(entry)
        region["recompute_entries"].append(index)
        self._new_step(index)
        region["recompute_steps"].append(self.step)
        out = func(*args, **kwargs)
        self._wrote(func, args, kwargs)
        forward_outputs = self.tape[original]["attrs"].get("outputs", [self.tape[original]["output"]]) \
            if original is not None else []
        ids, unwritten = [], op_info(func).unwritten      # an empty_like's bytes are not values: never described
        for i, tensor in enumerate(op_tensors(out)):
            twin = forward_outputs[i] if i < len(forward_outputs) else None
            label = self.tensors[twin]["name"] if twin is not None else f"{name}{index}"
            ids.append(self.tensor(tensor, "activation", name=f"{label} (recomputed)", produced_by=index,
                                   scope=scope, recompute_of=twin, unwritten=unwritten))
        entry["output"] = ids[0] if ids else None
        if len(ids) > 1:
            entry["attrs"]["outputs"] = ids
        entry["flops"], entry["flops_source"] = flops(func, args, kwargs, out, inputs)
        return out

    def _forward_twin(self, region, name):
        """The forward entry this recompute op re-runs: the region's next one of the same op (a selective
        policy's cached outputs are not re-run, so their entries are skipped)."""
        start, end = region["entries"]
        end = len(self.tape) if end is None else end
        for position in range(start + region["_cursor"], end):
            if self.tape[position]["op"] == name and self.tape[position]["phase"] == "forward":
                region["_cursor"] = position - start + 1
                return position
        return None

    def recompute_pack(self, holder, tensor):
        """A save of the recompute: it refills `holder`, which stands for a forward entry's save."""
        if not self._recomputing:
            return
        noted = self._holders.get(holder) if holder is not None else None
        with self.unrecorded():
            uid = self.known(tensor, "activation", None)
        self._recomputing[-1]["_pending"].append((noted["entry"] if noted else None, uid))

    def _settle_saves(self, region):
        """Each recomputed save goes to the recompute entry that re-ran its saver (an input save is packed before
        its op runs, so this waits for the recompute's end)."""
        for saver, uid in region.pop("_pending"):
            region["_reads"].setdefault(saver, []).append(uid)
            index = region["_recomputed"].get(saver)
            if index is not None:       # None: early stop ended the recompute before its saver re-ran
                self.tape[index]["saved"].append(uid)
                self.tensors[uid]["saved_by"].append(index)
        region["_pending"] = []

    def reads_of(self, index):
        """What a backward node reads: its entry's saves, or, in a region, what its recompute entry saved."""
        entry = self.tape[index]
        region = entry.get("checkpoint_region")
        if region is None or entry["phase"] != "forward":
            return list(entry["saved"])
        return list(self.checkpoint_regions[region]["_reads"].get(index, []))

    @contextmanager
    def unrecorded(self):
        """Within: ops are not the model's (the recorder's or checkpoint's own bookkeeping)."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def regions_document(self):
        """`checkpoint_regions` for the document: each region's forward entries [first, end), where its recompute
        ran (the backward node's entry) and the recompute's entries and steps."""
        return [{key: value for key, value in region.items() if not key.startswith("_")}
                for region in self.checkpoint_regions]


_BOOKKEEPING = (torch.ops.aten.detach.default, torch.ops.aten.alias.default)
_PLACEHOLDER = torch.empty(0)       # what a probe of a checkpoint placeholder reads instead of a recompute
