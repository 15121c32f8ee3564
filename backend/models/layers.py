"""Layer lists in a spec: checked and shape-planned through the kind registry (backend/models/kinds/).

`check_layer_list` validates and normalizes; `plan_layers` infers each output shape and tallies tape entries
and bytes without allocating anything (the caps are enforced on this tally). Builds are in network.py.
"""
from backend.models.kinds import check_layers as check_layer_list
from backend.models.kinds import plan_layers

__all__ = ["Tally", "check_layer_list", "plan_layers"]


class Tally:
    """What a spec would cost, counted from shapes alone: tape entries, bytes, the largest tensor, and the
    matmul FLOPs and elements its forward computes (what the work cap in backend/driver/work.py prices).

    `grad_flows` follows whether the running value requires grad (so backward has something to do);
    `grad_enabled` is False inside a no_grad wrapper.
    """

    def __init__(self, itemsize, vocab=0):
        self.itemsize = itemsize
        self.vocab = vocab
        self.entries = 0
        self.activation_bytes = 0
        self.activation_elements = 0
        self.param_elements = 0
        self.max_elements = 0
        self.matmul_flops = 0
        self.grad_flows = False
        self.grad_enabled = True

    def op(self, elements, entries=1, itemsize=None):
        self.entries += entries
        self.activation_bytes += elements * (itemsize or self.itemsize)
        self.activation_elements += elements
        self.max_elements = max(self.max_elements, elements)

    def matmul(self, m, k, n, times=1):
        """An [m, k] @ [k, n] product (`times` of them): 2·m·k·n FLOPs each."""
        self.matmul_flops += 2 * m * k * n * times

    def params(self, elements):
        self.param_elements += elements
        self.max_elements = max(self.max_elements, elements)
