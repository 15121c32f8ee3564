"""Which modules of a torch model a checkpoint what-if counts as blocks: the class of the longest run of same-class
children of an nn.ModuleList or nn.Sequential and every run of it (a transformer's `h`, T5's encoder and decoder
blocks, ResNet's BasicBlocks in layer1..layer4, timm's `blocks`), or the module paths the user names with --blocks."""
from torch import nn

from backend.importers.mistakes import ImportMistake

CONTAINERS = (nn.ModuleList, nn.Sequential)


class BlocksError(ImportMistake):
    """A --blocks path the model does not have, or a model with no container to take blocks from."""


def find_blocks(model):
    """The paths of the model's blocks: the class of the longest run of consecutive same-class children of one of
    its ModuleLists or Sequentials (the first such run on a tie), and every run of that class (an encoder-decoder's
    two stacks, ResNet's layer1..layer4 of BasicBlocks), in the order named_modules() visits them; [] if none.
    A Sequential's run needs two: its children are layers of any kind (Linear, ReLU, ...), so one of a class is no
    block; a ModuleList's children are blocks by intent. A run inside a block already found is that block's own."""
    runs = []
    for path, container in model.named_modules():
        if isinstance(container, CONTAINERS):
            shortest = 1 if isinstance(container, nn.ModuleList) else 2
            runs += [(block_class, run) for block_class, run in same_class_runs(path, container) if len(run) >= shortest]
    if not runs:
        return []
    longest = max(runs, key=lambda found: len(found[1]))[0]      # max keeps the first of equals
    blocks = []
    for block_class, run in runs:
        if block_class is longest and not any(_inside(path, blocks) for path in run):
            blocks += run
    return blocks


def _inside(path, blocks):
    return any(path.startswith(block + ".") for block in blocks)


def block_runs(paths):
    """How many consecutive blocks of `paths` share a parent module, run by run: [2, 2] for an encoder's and a
    decoder's two blocks. A checkpoint region never crosses from one run into the next (they need not chain)."""
    runs, last_parent = [], None
    for path in paths:
        parent = path.rpartition(".")[0]
        if runs and parent == last_parent:
            runs[-1] += 1
        else:
            runs.append(1)
            last_parent = parent
    return runs


def same_class_runs(path, container):
    """The container's children as runs of consecutive same-class modules: (their class, their module paths)."""
    runs = []
    for name, child in container.named_children():
        child_path = f"{path}.{name}" if path else name
        if runs and type(child) is runs[-1][0]:
            runs[-1][1].append(child_path)
        else:
            runs.append((type(child), [child_path]))
    return runs


def blocks_for(model, text=None):
    """The block paths a what-if checkpoints: those `--blocks` names, else find_blocks'; BlocksError if none."""
    if text:
        return named_blocks(model, text)
    paths = find_blocks(model)
    if not paths:
        raise BlocksError(f"--checkpoint: {type(model).__name__} has no nn.ModuleList or nn.Sequential with a run "
                          "of same-class children to take its blocks from; name the modules to checkpoint with "
                          f"--blocks, e.g. --blocks {','.join(example_paths(model))}")
    return paths


def named_blocks(model, text):
    """The module paths of `--blocks a.b,c.d`, each checked against the model; BlocksError names what is wrong."""
    paths = [path.strip() for path in text.split(",") if path.strip()]
    if not paths:
        raise BlocksError("--blocks is empty: give comma-separated module paths, e.g. "
                          f"--blocks {','.join(example_paths(model))}")
    known = dict(model.named_modules())
    for path in paths:
        if path not in known:
            containers = [p for p, m in known.items() if p and isinstance(m, CONTAINERS)]
            hint = f" (its ModuleLists and Sequentials: {', '.join(containers[:4])})" if containers else ""
            raise BlocksError(f"--blocks {path}: {type(model).__name__} has no module at that path{hint}; "
                              f"name modules as model.named_modules() does, e.g. {example_paths(model)[0]}")
    if len(set(paths)) != len(paths):
        raise BlocksError("--blocks names a module twice: list each block once, in the order the model calls them")
    return paths


def example_paths(model, count=2):
    """The model's own module paths for a hint's "e.g.": its first blocks when it has some, else its first
    modules, shallowest first."""
    blocks = find_blocks(model)
    if len(blocks) >= count:
        return blocks[:count]
    paths = sorted((path for path, _ in model.named_modules() if path), key=lambda path: path.count("."))
    return paths[:count] or [type(model).__name__.lower()]       # a stable sort keeps the model's order
