"""Which block (what checkpoint schedules count as a layer) a tape entry belongs to, by its scope."""


def block_of_scope(scope, paths):
    """The index of the block whose path prefixes `scope`, or None (the loss, setup)."""
    if not scope:
        return None
    for index, path in enumerate(paths):
        if scope == path or scope.startswith(path + "[") or scope.startswith(path + "."):
            return index
    return None
