"""What a spec would cost, counted from shapes alone: the Tally each kind's plan (backend/models/kinds/) adds to.

The size caps are enforced on it (backend/models/spec.py) and the work cap prices it (backend/driver/work.py);
nothing is allocated to count it.
"""

# A gradient penalty's cost on the size tally (Tally.add_recorded_backward), measured, see there.
RECORDED_ENTRY_FACTOR = 4.5     # tape entries with a recorded backward and its penalty, per forward entry
RECORDED_BYTES_FACTOR = 3.5     # activation bytes held, against the forward's alone
RECORDED_FLOPS_FACTOR = 3.0     # matmul FLOPs of forward + backward + backward-2, against forward + backward


class Tally:
    """What a spec would cost, counted from shapes alone: tape entries, bytes, the largest tensor, and the
    matmul FLOPs and elements its forward computes (what the work cap in backend/driver/work.py prices).

    `grad_flows` follows whether the running value requires grad (so backward has something to do);
    `grad_enabled` is False inside a no_grad wrapper. For a gradient penalty (∂loss/∂input, `input_requires_grad`):
    `input_cut` is the first layer that cut the running value off from the input (a detach, a no_grad), None while
    it depends on it; `on_input` is True while the running value is still the input itself (no op has run on it).
    """

    def __init__(self, itemsize, vocab=0, input_requires_grad=False):
        self.itemsize = itemsize
        self.input_requires_grad = input_requires_grad
        self.input_cut = None
        self.on_input = True
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

    def add_recorded_backward(self):
        """A gradient penalty's cost on top of the forward's: its backward is recorded (create_graph) and a second
        backward sweeps both tapes. Measured on the gradient-penalty preset and a 16-layer tanh MLP: 4.3-4.4x the
        tape entries, 1.8-3.2x the peak and 2.1-2.8x the time of the same model without the penalty; the
        factors below bound those, so the size and work caps still bound a penalized spec."""
        self.entries = int(self.entries * RECORDED_ENTRY_FACTOR)
        self.activation_bytes = int(self.activation_bytes * RECORDED_BYTES_FACTOR)
        self.activation_elements = int(self.activation_elements * RECORDED_BYTES_FACTOR)
        self.matmul_flops = int(self.matmul_flops * RECORDED_FLOPS_FACTOR)

    def params(self, elements):
        self.param_elements += elements
        self.max_elements = max(self.max_elements, elements)
