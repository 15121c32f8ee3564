"""The backward sweep's order, from torch's own graph: after forward, loss.grad_fn's nodes are walked (which node is
which tape entry, what each saves) and hooked, so each node's pre-hook is one sweep step (its adjoint) and its
post-hook lists the gradients it hands on; AccumulateGrad nodes are the parameters' accumulations. A pipeline
stage attaches once per micro-batch, from that micro-batch's outputs (or loss): a node already hooked (a parameter's
AccumulateGrad, shared by every micro-batch) is not hooked again."""
from backend.trace.records import accumulation, adjoint_record, contribution, sweep_item


class SweepOrder:
    """`sweep` (one item per backward node, in the order torch ran them) and the gradients' names."""

    def _init_sweep(self):
        self._node_entry = {}       # grad_fn node -> tape index (None for AccumulateGrad)
        self._variable_of = {}      # AccumulateGrad node -> the leaf it accumulates into
        self._hooked = set()        # every node hooked so far (attach may run once per micro-batch)

    # ----- the graph, after forward ------------------------------------------------------------
    def attach(self, *roots):
        """Walk the graph behind the roots (the loss; a pipeline stage's outputs): which node is which entry, what
        each saves, and hook the sweep."""
        stack = [root.grad_fn for root in roots if root.grad_fn is not None]
        self._busy += 1             # reading _saved_* must not record ops
        try:
            if self._awaiting_output:
                self._claim_outputs(list(roots), [self.known(root, "activation", None) for root in roots])
            for seq, first_entry in self._awaiting_output.items():     # its output never seen: its first op
                self._entry_of_seq.setdefault(seq, first_entry)
            self._walk(self._hooked, stack)
        finally:
            self._busy -= 1

    def _walk(self, seen, stack):
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if _is_accumulate(node):
                index = None
                self._variable_of[node] = node.variable
            else:
                index = self._entry_of_seq.get(node._sequence_nr())
            self._node_entry[node] = index
            if index is not None:
                self._read_saved(node, index)
            self._handles.append(node.register_prehook(self._node_begin(node)))
            self._handles.append(node.register_hook(self._node_end(node)))
            stack.extend(next_node for next_node, _ in node.next_functions)

    # ----- each node as it runs ----------------------------------------------------------------
    def _node_begin(self, node):
        def begin(grad_outputs):
            index = self._node_entry.get(node)
            if index is None:
                self._accumulate(node, grad_outputs)
                return None
            self._new_step(index)
            entry = self.tape[index]
            grad = next(filter(_is_given, grad_outputs), None)
            adjoint = None
            if grad is not None:
                uid = self._gradient_of(grad, entry["output"])
                adjoint = adjoint_record(uid, grad.shape)
                self._describe(adjoint, grad, with_values=False)
            self.sweep.append(sweep_item(self.step, entry, adjoint, list(entry["saved"]), flops=0, flops_by_source={}))
            return None
        return begin

    def _node_end(self, node):
        def end(grad_inputs, grad_outputs):
            if self._node_entry.get(node) is None or not self.sweep:
                return None
            item = self.sweep[-1]
            if "checkpoint_region" in self.tape[item["entry"]]:
                item["reads"] = self.reads_of(item["entry"])       # known once its region was recomputed
            for grad, (target, _) in zip(grad_inputs, node.next_functions):
                if grad is None or target is None:
                    continue
                variable = self._variable_of.get(target)
                if variable is not None:
                    to = self.lookup(variable)
                else:
                    parent = self._node_entry.get(target)
                    to = self.tape[parent]["output"] if parent is not None else None
                if to is not None:
                    item["contributions"].append(contribution(to, self._gradient_of(grad, to), grad.shape))
            return None
        return end

    def _gradient_of(self, grad, owner):
        """The record of `grad` as the gradient of tensor record `owner`: d<owner's name>, grad_of the owner. A
        buffer a vjp passed through (AddBackward hands one tensor to both inputs) is the gradient of several
        tensors: each gets a record of its own over that storage, as a view does."""
        uid = self.known(grad, "grad", None)
        if owner is None:
            return uid
        record = self.tensors[uid]
        if record.get("grad_of") not in (None, owner):
            if record["kind"] != "grad":
                return uid
            uid = self.tensor(grad, "grad", None)              # a second record over the same storage
            record = self.tensors[uid]
        elif record["kind"] != "grad" or record["produced_by"] is not None:
            return uid                  # a forward value handed back as a gradient keeps its own name
        record["grad_of"] = owner
        if not record["name"].endswith(".grad"):
            record["name"] = f"d{self.tensors[owner]['name']}"
        return uid

    def _accumulate(self, node, grad_outputs):
        param = self.lookup(self._variable_of[node]) if node in self._variable_of else None
        grad = grad_outputs[0] if grad_outputs else None
        if param is None or grad is None or not self.sweep:
            return
        uid = self.known(grad, "grad", None)
        self.tensors[uid].update(grad_of=param, name=f"{self.tensors[param]['name']}.grad")
        self.sweep[-1]["accumulations"].append(accumulation(param, [uid], uid, "grad"))

    def name_grads(self, model):
        """After backward: each parameter's .grad (a copy when it was accumulated) is named after it."""
        for name, p in model.named_parameters():
            if p.grad is not None:
                uid = self.known(p.grad, "grad", f"{name}.grad")
                param = self.lookup(p)
                self.tensors[uid].update(name=f"{name}.grad", **({"grad_of": param} if param is not None else {}))


def _is_given(value):
    return value is not None


def _is_accumulate(node):
    return hasattr(node, "variable") and node.name() == "torch::autograd::AccumulateGrad"
