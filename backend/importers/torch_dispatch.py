"""Every aten op the torch recorder sees, through a TorchDispatchMode: a forward op is a tape entry and a step
(its FLOPs, its outputs' records, the autograd node it made); in backward and in the optimizer, an op's outputs
are gradient and optimizer-state records (and a backward op's FLOPs go to the node running it)."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from backend.importers.torch_ops import TAPESCOPE, flops, op_info, op_tensors
from backend.trace.records import entry_record

_next_sequence_nr = torch._C._autograd._get_sequence_nr
_set_eval_frame = torch._C._dynamo.eval_frame.set_eval_frame


class OpRecording(TorchDispatchMode):
    """The dispatch mode's half of TorchRecorder: reads and writes its tape, steps and tensor records."""

    @classmethod
    def _should_skip_dynamo(cls):
        """torch's disable-Dynamo wrapper (two Python frames, an export check and four eval-frame switches around
        every op) is left off, as torch's own docstring shows; __torch_dispatch__ turns Dynamo off itself, with one
        switch each way: an op of a torch.compile'd function of the model lands here, and Dynamo must not compile the
        recorder's own frames (it did, 58 of them, without any switch)."""
        return False

    def _init_ops(self):
        self._entry_of_seq = {}     # autograd sequence_nr -> tape index
        self._last_seq = _next_sequence_nr()
        self._awaiting_output = {}  # sequence_nr of a node made between ops (a custom Function's) -> next tape index

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        prior = _set_eval_frame(None)       # no Dynamo in the recorder's frames (see _should_skip_dynamo)
        try:
            return self._dispatch(func, args, kwargs or {})
        finally:
            _set_eval_frame(prior)

    def _dispatch(self, func, args, kwargs):
        if self._busy or self.phase in ("setup", "done") or func in _MARKERS:
            return func(*args, **kwargs)
        info = op_info(func)        # what the recorder reads of the op, worked out once per op overload
        if self.phase == "forward":
            return self._forward_op(func, args, kwargs, info)
        if self.phase == "recompute":
            return self.recompute_op(func, args, kwargs)
        if self.phase == "optimizer":
            self._new_step(None, op=info.name)
        elif self._freed_in_step and self.steps:
            # A node freed a buffer before this op allocates: a step of its own keeps the two apart, so a
            # step's live bytes are what was held together at one moment (as in the engine's recompute steps).
            self._new_step(self.steps[-1]["entry"], op=info.name, continues=True)
        out = info.call(*args, **kwargs)
        if info.writes:
            self._wrote(func, args, kwargs)
        outputs = op_tensors(out)
        if self.phase == "backward" and self.sweep:
            self._count_backward(func, args, kwargs, out, outputs, info)
        kind = "grad" if self.phase == "backward" else "optimizer"
        for t in outputs:
            key = self._key(t)
            if self.lookup(t, key) is None:     # named by its op and step until it is known as a gradient or state
                self.tensor(t, kind, name=f"{info.name}@{self.step}", scope=None, key=key, unwritten=info.unwritten)
        return out

    def _count_backward(self, func, args, kwargs, out, outputs=None, info=None):
        """A backward op's FLOPs go to the node running it (a checkpoint's recompute, to the node that started it)."""
        count, source = flops(func, args, kwargs, out, outputs=outputs, info=info)
        if not count:
            return
        item = self.sweep[-1]
        item["flops"] += count
        by_source = item["flops_by_source"]
        by_source[source] = by_source.get(source, 0) + count

    def _forward_op(self, func, args, kwargs, info=None):
        info = op_info(func) if info is None else info
        name = info.name
        inputs = op_tensors(args) + op_tensors(tuple(kwargs.values())) if kwargs else op_tensors(args)
        index, seen = len(self.tape), len(self.tensors)
        input_ids = [self.known(t, "input", None, scope="input") for t in inputs]
        for position, uid in enumerate(input_ids):
            if uid >= seen:             # made where no op ran (torch.tensor(...)'s data): named by the op reading it
                self.tensors[uid]["name"] = f"{name}{index}.input{position}"
        self._note_functions(index, inputs, input_ids)
        entry = entry_record(index, name, info.family, "", input_ids, self.scope, 0, "", {"aten": info.aten},
                             "forward", flops_source=TAPESCOPE)
        self.tape.append(entry)
        self._new_step(index)
        out = info.call(*args, **kwargs)
        if info.writes:
            self._wrote(func, args, kwargs)
        outputs = op_tensors(out)
        # a transpose is named after what it transposes (`q.weight.t()`): "t7" read as a tensor with no name
        label = f"{self.tensors[input_ids[0]]['name']}.t()" if name == "t" and input_ids else f"{name}{index}"
        unwritten = info.unwritten
        ids = [self.tensor(t, "activation", name=label + (f".{i}" if i else ""), produced_by=index,
                           scope=entry["scope"], unwritten=unwritten) for i, t in enumerate(outputs)]
        entry["output"] = ids[0] if ids else None
        if len(ids) > 1:
            entry["attrs"]["outputs"] = ids
        entry["flops"], entry["flops_source"] = flops(func, args, kwargs, out, inputs, outputs, info)
        sequence_nr = _next_sequence_nr()
        for seq in range(self._last_seq, sequence_nr):      # the autograd node(s) this op created
            self._entry_of_seq[seq] = index
        self._last_seq = sequence_nr
        return out

    def _note_functions(self, index, inputs, input_ids):
        """A custom autograd.Function's node is made before its forward runs its ops (with grad off), so no op
        creates it: it is the entry that produced its output, known when a later op (or the loss) reads that output."""
        first_seq = _next_sequence_nr()
        for seq in range(self._last_seq, first_seq):
            self._awaiting_output[seq] = index
        self._last_seq = first_seq
        if self._awaiting_output:
            self._claim_outputs(inputs, input_ids)

    def _claim_outputs(self, tensors, ids):
        for tensor, uid in zip(tensors, ids):
            node = tensor.grad_fn
            if node is not None and node._sequence_nr() in self._awaiting_output:
                produced_by = self.tensors[uid]["produced_by"]
                fallback = self._awaiting_output.pop(node._sequence_nr())
                self._entry_of_seq[node._sequence_nr()] = fallback if produced_by is None else produced_by


# Not ops of the program: the profiler's markers, and a tensor subclass's metadata queries (a FakeTensor's .device
# goes through dispatch as prim.device)
_MARKERS = (torch.ops.profiler._record_function_enter_new.default, torch.ops.profiler._record_function_exit._RecordFunction,
            torch.ops.prim.device.default)
