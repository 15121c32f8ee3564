"""What autograd saves, as the torch recorder sees it: saved_tensors_hooks' pack and unpack (a `Packed` per save,
whose death is autograd letting go of it), and each grad_fn node's saves read after forward (built-in nodes'
`_saved_*` attributes, a custom autograd.Function's `saved_tensors`) into its entry's `saved` and `why`."""
import functools

import torch


class Packed:
    """What saved_tensors_hooks hand autograd: the tensor itself plus who we are; its death is the release."""
    __slots__ = ("tensor", "uid", "recorder", "__weakref__")

    def __init__(self, tensor, uid, recorder):
        self.tensor, self.uid, self.recorder = tensor, uid, recorder

    def __del__(self):
        recorder = self.recorder
        if recorder is not None and recorder.phase != "done":
            recorder.on_release(self.uid)


class SavedTensors:
    """`packed` (every forward pack, in order) and the entries' `saved`; reads TorchRecorder's tape and sweep."""

    def _init_saves(self):
        self.packed = []            # (tensor id, storage id) of every pack, in order
        self._probe = None          # the tape index whose node's _saved_* attributes are being read

    # ----- saved_tensors_hooks -----------------------------------------------------------------
    def pack(self, tensor):
        if self.phase != "forward":
            return Packed(tensor, None, None)          # a recompute's packs: not the forward's tape
        uid = self.known(tensor, "activation", None, scope=self.scope)
        self.packed.append((uid, self.tensors[uid]["storage"]))
        return Packed(self._alias(tensor), uid, self)

    def unpack(self, packed):
        if self._probe is not None and packed.uid is not None:
            self._probed(packed.uid, "saved", "saved_by")
        return packed.tensor

    def _probed(self, uid, field, back_field):
        """The node being probed saves tensor `uid`: listed in its entry's `field` (saved, or recomputes in a
        checkpoint region) and the tensor's `back_field`, named by the attribute read."""
        index, names, label = self._probe
        entry = self.tape[index]
        listed = entry.setdefault(field, [])
        if uid not in listed:
            listed.append(uid)
            self.tensors[uid].setdefault(back_field, []).append(index)
        names.append(label.format(len(names)))

    def on_release(self, uid):
        if self.sweep and self.phase == "backward":
            freed = self.sweep[-1]["freed"]
            if uid not in freed:
                freed.append(uid)

    def _alias(self, tensor):
        """What a Packed holds: a second Tensor over the same storage, so the user's own Tensor dies when the
        program drops it (its finalizer gives `dropped`) while the saved storage lives on until released."""
        if type(tensor) is torch.Tensor or type(tensor) is torch.nn.Parameter:
            with torch._C._DisableTorchDispatch():      # our detach, no op of the step: past the dispatch mode
                return tensor.detach()
        self._busy += 1
        try:
            return tensor.detach()
        finally:
            self._busy -= 1

    # ----- a node's saves, read after forward --------------------------------------------------
    def _read_saved(self, node, index):
        entry = self.tape[index]
        entry["backward"] = node.name()
        names = []
        for attr, label in _saved_attributes(type(node)):
            self._probe = (index, names, label)
            try:
                getattr(node, attr)
            except RuntimeError:        # freed already, or not a tensor
                pass
            finally:
                self._probe = None
        if names and "checkpoint_region" in entry:
            entry["why"] = (f"{node.name()} needs {', '.join(dict.fromkeys(names))} in backward; checkpoint keeps "
                            f"placeholders and region {entry['checkpoint_region']} recomputes them")
        elif names:
            entry["why"] = f"{node.name()} keeps {', '.join(dict.fromkeys(names))} for backward"
        else:
            entry["why"] = f"{node.name()} keeps nothing for backward"


@functools.lru_cache(maxsize=None)
def _saved_attributes(node_class):
    """(attribute, label) of what a grad_fn class exposes of its saves: a built-in node's `_saved_*` attributes
    (each class is generated per op: the names are fixed), a custom autograd.Function's `saved_tensors`
    (what its ctx.save_for_backward was given, labelled by position)."""
    generated = tuple((attr, attr[len("_saved_"):]) for attr in dir(node_class) if attr.startswith("_saved_"))
    if generated or not issubclass(node_class, torch.autograd.function.BackwardCFunction):
        return generated
    return (("saved_tensors", "saved_tensors[{}]"),)
