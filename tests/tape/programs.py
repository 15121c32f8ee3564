"""Random autograd programs over the public ops, built from a seed: one text, run on our engine and on PyTorch.

`build(index)` draws a few leaves, then statements from the table in program_ops.py (where a new op joins with
one row), and ends with `out`, the concatenation of every value that nothing consumed after it last changed,
so each reaches the output. `program.text()` is a script a developer can paste; `program.compile(ours())` and
`program.compile(torch_lib())` execute that same text.

    .venv/bin/python -m tests.tape.programs 17          # print program 17
"""
import random
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from tests.tape.program_ops import FAMILIES, GENERATORS

BASE_SEED = 20_000


@dataclass
class Value:
    """A tensor the program has named, with what the generators need to know about it."""
    name: str
    shape: tuple
    grad: bool                  # requires grad (in PyTorch's semantics, in-place ops included)
    storage: int                # shared by views of one allocation
    leaf: bool = False
    view: bool = False          # shares an earlier value's storage (a reshape that copies counts too: conservative)
    positive: bool = False      # strictly positive: log, a fractional power and division may take it
    zeros: bool = False         # holds exact zeros (relu output, a leaf seeded with zeros)


@dataclass
class Program:
    index: int
    seed: int
    leaves: list = field(default_factory=list)      # (name, source expression)
    lines: list = field(default_factory=list)       # the body of forward()
    families: set = field(default_factory=set)

    def source(self):
        leaf_lines = [f"{name} = {expr}" for name, expr in self.leaves]
        args = ", ".join(name for name, _ in self.leaves)
        body = "\n".join(f"    {line}" for line in self.lines)
        return "\n".join([f"rng = np.random.default_rng({self.seed})", *leaf_lines, "",
                          f"def forward({args}):", body, "    return out", ""])

    def text(self):
        return (f"# program {self.index} (seed {self.seed}); families: {', '.join(sorted(self.families))}\n"
                "import numpy as np\nimport backend.tape as T\nfrom backend.tape import functional as F\n\n"
                f"{self.source()}\nout = forward({', '.join(name for name, _ in self.leaves)})\n")

    def compile(self, lib):
        """Fresh leaves and the forward function, on `lib` (ours() or torch_lib())."""
        namespace = {"np": np, "T": lib.T, "F": lib.F}
        exec(compile(self.source(), f"<program {self.index}>", "exec"), namespace)   # noqa: S102
        return [namespace[name] for name, _ in self.leaves], namespace["forward"]


class Builder:
    """The state of one program being drawn: its values, which storages are saved or viewed, what is unconsumed."""

    def __init__(self, index, families):
        self.seed = BASE_SEED + index
        self.rng = random.Random(self.seed)
        self.layouts = random.Random(-self.seed)     # its own stream: a leaf's layout never changes the statements
        self.program = Program(index, self.seed)
        self.families = families
        self.values = []
        self.live = []              # names of values no statement has consumed since they last changed
        self.saved = set()          # storages an op may have saved: no in-place write after that
        self.viewed = set()         # storages with a view
        # Storages with a reshape: a view or a copy by the input's layout, in torch as in numpy ("do not rely on
        # it", torch's docs say), and the layouts differ (torch.tensor copies a leaf C-ordered): never written.
        self.reshaped = set()
        self.leaf_storages = set()
        self.storages = 0
        self.statements = 0
        self.leaf_elements = 0

    # ----- leaves ---------------------------------------------------------------------------------
    def _leaf(self, prefix, expr, shape, grad, pooled=True, **flags):
        name = f"{prefix}{len(self.program.leaves)}"
        self.program.leaves.append((name, expr))
        self.storages += 1
        self.leaf_storages.add(self.storages)
        value = Value(name, tuple(shape), grad, self.storages, leaf=True, **flags)
        if pooled and (grad or prefix == "c"):
            self.values.append(value)
            self.leaf_elements += int(np.prod(shape)) if grad else 0
        return value

    def param(self, shape, positive=False):
        """A parameter of `shape`: an existing one half the time (a parameter used several times)."""
        shape = tuple(shape)
        reuse = [v for v in self.values if v.leaf and v.grad and v.shape == shape and v.positive >= positive]
        if reuse and (self.rng.random() < 0.5 or self.leaf_elements > 60):
            return self.rng.choice(reuse)
        low, high = (0.5, 2.0) if positive else (-1.0, 1.0)
        values = self.laid_out(f"rng.uniform({low}, {high}, {shape})", shape)
        return self._leaf("p", f"T.parameter({values})", shape, True, positive=positive)

    def const(self, shape):
        return self._leaf("c", f"T.tensor({self.laid_out(f'rng.uniform(-1.0, 1.0, {tuple(shape)})', shape)})",
                          shape, False)

    def laid_out(self, values, shape):
        """The same values in C order, Fortran order or as a strided view (every other column of a wider
        array): layout must never change a result, and PyTorch's copy of the leaf is C-ordered either way."""
        layout = self.layouts.choice(["C", "F", "strided"] if len(shape) >= 2 else ["C", "strided"])
        if layout == "F":
            return f"np.asfortranarray({values})"
        if layout == "strided" and len(shape) >= 1:
            return f"np.repeat({values}, 2, axis=-1)[..., ::2]"
        return values

    def indices(self, high, shape, expr=None):
        return self._leaf("i", expr or f"T.tensor(rng.integers(0, {high}, {tuple(shape)}))", shape, False)

    def mask(self, shape):
        return self._leaf("m", f"T.tensor(rng.random({tuple(shape)}) < 0.3)", shape, False)

    # ----- choosing inputs ------------------------------------------------------------------------
    def pick(self, fits=lambda v: True):
        """A value that `fits`, most often one of the latest (deep chains), else any (fan-out); None if none."""
        candidates = [v for v in self.values if fits(v)]
        if not candidates:
            return None
        if self.rng.random() < 0.6:
            return self.rng.choice(candidates[-3:])
        return self.rng.choice(candidates)

    def axis(self, ndim):
        """An axis of an `ndim`-d value, negative half the time."""
        return self.rng.randrange(ndim) - (ndim if self.rng.random() < 0.5 else 0)

    def dim(self):
        return self.rng.randint(1, 4)

    def shape(self, ndim=None):
        return tuple(self.dim() for _ in range(ndim if ndim is not None else self.rng.randint(1, 3)))

    # ----- statements -----------------------------------------------------------------------------
    def emit(self, expr, shape, inputs, saves=True, saves_out=False, view=False, **flags):
        """`hN = expr`: a new value. `saves`: the op may save its inputs, `saves_out`: its output (no in-place
        write may follow, or PyTorch raises its version error); `view`: it shares input 0's storage."""
        name = f"h{self.statements}"
        self.statements += 1
        self.program.lines.append(f"{name} = {expr}")
        for v in inputs:
            if saves:
                self.saved.add(v.storage)
            if v.name in self.live:
                self.live.remove(v.name)
        if view:
            storage = inputs[0].storage
            self.viewed.add(storage)
        else:
            self.storages += 1
            storage = self.storages
        if saves_out:
            self.saved.add(storage)
        value = Value(name, tuple(shape), any(v.grad for v in inputs), storage, view=view, **flags)
        self.values.append(value)
        self.live.append(name)
        return value

    def emit_inplace(self, target, call, others, saves):
        """`target.call`: writes target's storage; every value on that storage changes and is live again."""
        self.program.lines.append(f"{target.name}.{call}")
        for v in others:
            if v.name in self.live:
                self.live.remove(v.name)
            self.saved.add(v.storage)
        grad = target.grad or any(v.grad for v in others)
        for v in self.values:
            if v.storage == target.storage:
                v.grad = v.grad or grad
                v.positive = False
                if v.name not in self.live:
                    self.live.append(v.name)
        if saves:
            self.saved.add(target.storage)

    def writable(self, v):
        """May take an in-place write: an intermediate (or a view of one) that nothing saved yet."""
        return (v.storage not in self.leaf_storages and v.storage not in self.saved and v.storage not in self.reshaped
                and (len(v.shape) > 0 or self.allows("inplace_0d")))

    def allows(self, family):
        return self.families.get(family, False)

    def uses(self, family):
        """Name a family a statement belongs to beside its generator's own (shown in the program's header)."""
        self.program.families.add(family)

    def finish(self):
        outputs = [v for v in self.values if v.name in self.live and v.grad]
        if not outputs:
            return False
        if len(outputs) == 1:
            self.program.lines.append(f"out = {outputs[0].name}")
        else:
            parts = ", ".join(f"{v.name}.reshape(-1)" for v in outputs)
            self.program.lines.append(f"out = F.cat([{parts}])")
        return True


def build(index, families=None):
    """Program `index`: the same statements every time for the same enabled families."""
    enabled = FAMILIES if families is None else families
    generators = [g for g in GENERATORS if enabled.get(g.family, False)]
    b = Builder(index, enabled)
    b.param(b.shape(b.rng.randint(1, 3)))
    if b.rng.random() < 0.3:
        b.const(b.shape())
    for _ in range(b.rng.randint(3, 8)):
        for _attempt in range(20):
            gen = b.rng.choices(generators, weights=[g.weight for g in generators])[0]
            before = len(b.program.lines)
            if gen.make(b) and len(b.program.lines) > before:
                b.program.families.add(gen.family)
                break
        if len(b.values) > 20:
            break
    if not b.finish():
        b.program.lines.append(f"out = {b.values[0].name} * 1.0")
    return b.program


# ============================== the two libraries ==============================

def ours():
    import backend.tape as T
    from backend.tape import functional as F
    return SimpleNamespace(T=T, F=F)


def torch_lib():
    """PyTorch behind the names the programs use: backend.tape's T (leaves) and F (functional API)."""
    import torch
    functional = torch.nn.functional

    def reduction(name):
        def reduce(x, axis=None, keepdims=False):
            if axis is None:
                return getattr(torch, name)(x)
            return getattr(x, name)(dim=axis, keepdim=keepdims)
        return reduce

    def cross_entropy(logits, target, **options):
        return functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), **options)

    T = SimpleNamespace(parameter=lambda a: torch.tensor(a, requires_grad=True), tensor=torch.tensor)
    F = SimpleNamespace(
        gelu=lambda x: functional.gelu(x, approximate="tanh"),
        softmax=functional.softmax, log_softmax=functional.log_softmax,
        sum=reduction("sum"), mean=reduction("mean"),
        max=lambda x, axis, keepdims=False: x.max(dim=axis, keepdim=keepdims).values,
        cat=torch.cat, masked_fill=lambda x, mask, value: x.masked_fill(mask, value),
        embedding=functional.embedding,
        layer_norm=lambda x, w, b, eps=1e-5: functional.layer_norm(x, w.shape, w, b, eps=eps),
        rms_norm=lambda x, w, eps=1e-6: functional.rms_norm(x, w.shape, w, eps=eps),
        scaled_dot_product_attention=functional.scaled_dot_product_attention,
        cross_entropy=cross_entropy, mse_loss=functional.mse_loss,
    )
    return SimpleNamespace(T=T, F=F)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["0"]:
        print(build(int(arg)).text())
