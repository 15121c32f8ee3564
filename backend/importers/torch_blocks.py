"""Which modules of a torch model a checkpoint what-if counts as blocks: the children of its largest
nn.ModuleList, or the module paths the user names with --blocks."""
from torch import nn


class BlocksError(ValueError):
    """A --blocks path the model does not have, or a model with no ModuleList to take blocks from."""


def find_blocks(model):
    """The paths of the children of the model's largest ModuleList (the first such list on a tie); [] if none."""
    lists = [(len(module), path) for path, module in model.named_modules() if isinstance(module, nn.ModuleList)]
    if not lists:
        return []
    size, path = max(lists, key=lambda found: found[0])       # max keeps the first of equals
    return [f"{path}.{name}" if path else name for name, _ in model.get_submodule(path).named_children()]


def named_blocks(model, text):
    """The module paths of `--blocks a.b,c.d`, each checked against the model; BlocksError names what is wrong."""
    paths = [path.strip() for path in text.split(",") if path.strip()]
    if not paths:
        raise BlocksError("--blocks is empty: give comma-separated module paths, e.g. --blocks transformer.h.0,transformer.h.1")
    known = dict(model.named_modules())
    for path in paths:
        if path not in known:
            lists = [p for p, m in known.items() if isinstance(m, nn.ModuleList)]
            hint = f" (its ModuleLists: {', '.join(lists[:4])})" if lists else ""
            raise BlocksError(f"--blocks {path}: {type(model).__name__} has no module at that path{hint}; "
                              "name modules as model.named_modules() does, e.g. transformer.h.0")
    if len(set(paths)) != len(paths):
        raise BlocksError("--blocks names a module twice: list each block once, in the order the model calls them")
    return paths
