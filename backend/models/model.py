"""A built model: seeded parameters, the input batch and targets, its blocks, loss and optimizer.

The driver that runs the blocks (plain or under checkpoint regions) is backend/trace/run.py.
"""
import numpy as np

import backend.tape as T
from backend.models.network import BuildContext, build_blocks
from backend.models.spec import input_shape
from backend.tape import layer_scope, tensor


class Model:
    """Everything one run needs, allocated from a normalized spec: run `blocks` in order, then `loss`."""

    def __init__(self, spec):
        self.spec = spec
        dtype = np.dtype(spec["dtype"])
        rng = np.random.default_rng(spec["seed"])
        T.manual_seed(spec["seed"])
        source = spec["input"]
        tokens = source["kind"] == "tokens"
        shape = input_shape(spec)
        # The input is drawn first, then the weights in layer order: Lab 1's order, so lab1-mlp matches it.
        if tokens:
            self.input = tensor(rng.integers(0, source["vocab"], shape), name="tokens")
        else:     # a gradient penalty differentiates the loss with respect to the input
            self.input = tensor(rng.uniform(-1, 1, shape).astype(dtype), name="x",
                                requires_grad="gradient_penalty" in spec["loss"])
        ctx = BuildContext(rng, dtype, spec.get("init_std"), source.get("vocab", 0))
        width = None if tokens else shape[-1]
        self.blocks, out_width = build_blocks(spec["layers"], width, ctx)
        self.params = ctx.params
        self.cuts = ctx.cuts                # where detach / no_grad layers cut the graph, in forward order
        self.backward_error = None          # the engine's text when backward stopped (backend/trace/run.py)
        out_shape = (*shape, out_width) if tokens else (*shape[:-1], out_width)
        self.target = self._make_target(rng, dtype, out_shape)
        self.optimizer = self._make_optimizer()

    def _make_target(self, rng, dtype, out_shape):
        loss = self.spec["loss"]
        if loss["type"] == "cross_entropy":
            return tensor(rng.integers(0, out_shape[-1], out_shape[:-1]), name="target")
        if loss["type"] == "mse":
            if loss["target"] == "square":       # x², made as the other targets are: a named input, not an op's
                return tensor(np.square(self.input.data), name="target")
            values = np.zeros(out_shape) if loss["target"] == "zeros" else rng.normal(0, 1, out_shape)
            return tensor(values.astype(dtype), name="target")
        return None

    def _make_optimizer(self):
        config = self.spec["optimizer"]
        params = [p for p in self.params.values() if p.requires_grad]      # a frozen layer's are not optimized
        if config["type"] == "sgd":
            return T.SGD(params, lr=config["lr"], momentum=config["momentum"], weight_decay=config["weight_decay"],
                         nesterov=config["nesterov"])
        if config["type"] in ("adam", "adamw", "adam8bit"):
            make = {"adam": T.Adam, "adamw": T.AdamW, "adam8bit": T.Adam8bit}[config["type"]]
            return make(params, lr=config["lr"], betas=tuple(config["betas"]), weight_decay=config["weight_decay"])
        return None

    def micro_batches(self):
        """(input, target) for each of the spec's `accumulate` micro-batches: row slices of the batch (views, no
        new bytes), or the whole batch once."""
        n = self.spec.get("accumulate", 1)
        if n == 1:
            return [(self.input, self.target)]
        rows = self.spec["batch"] // n
        cut = lambda t, k: None if t is None else t[k * rows:(k + 1) * rows]  # noqa: E731
        return [(cut(self.input, k), cut(self.target, k)) for k in range(n)]

    @property
    def loss_is_mean(self):
        """mse and cross_entropy average over rows, so N micro-batch losses are each divided by N; a sum adds up."""
        return self.spec["loss"]["type"] != "sum"

    def loss(self, out, target=None):
        kind = self.spec["loss"]["type"]
        target = self.target if target is None else target
        with layer_scope("loss"):
            if kind == "cross_entropy":
                return T.cross_entropy(out, target)
            if kind == "mse":
                return T.mse_loss(out, target)
            return out.sum()

    def penalized(self, loss):
        """loss + λ·mean over rows of (‖∂loss/∂x_row‖ − 1)² (WGAN-GP's penalty), or None without one.

        ∂loss/∂x comes from a backward with create_graph=True: its vjps are recorded on the tape (the first
        backward's intermediates are saved for the second), so the penalty can itself be differentiated."""
        penalty = self.spec["loss"].get("gradient_penalty")
        if penalty is None:
            return None
        (slope,) = T.grad(loss, self.input, create_graph=True)
        with layer_scope("gradient_penalty"):
            norms = (slope * slope).sum(axis=-1) ** 0.5
            return loss + ((norms - 1.0) ** 2).mean() * penalty["weight"]
