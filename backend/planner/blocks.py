"""The model's blocks (what checkpoint schedules count as layers) and which tape entries belong to each."""


def block_paths(spec):
    """Top-level block paths in forward order: a repeat contributes one block per iteration."""
    paths = []
    for i, layer in enumerate(spec["layers"]):
        if layer["type"] == "repeat":
            paths.extend(f"layers[{i}][{j}]" for j in range(layer["times"]))
        else:
            paths.append(f"layers[{i}]")
    return paths


def block_of_scope(scope, paths):
    """The index of the block whose path prefixes `scope`, or None (the loss, setup)."""
    if not scope:
        return None
    for index, path in enumerate(paths):
        if scope == path or scope.startswith(path + "[") or scope.startswith(path + "."):
            return index
    return None
