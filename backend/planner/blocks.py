"""Which block (what checkpoint schedules count as a layer) a tape entry belongs to, by its scope."""


class BlockIndex:
    """Block paths by name: a scope's block is found from the scope's own prefixes, not by scanning every path."""

    def __init__(self, paths):
        self.index = {}
        for i, path in enumerate(paths):
            self.index.setdefault(path, i)

    def block_of(self, scope):
        """The index of the first block whose path prefixes `scope`, or None (the loss, setup)."""
        if not scope:
            return None
        found = [self.index[prefix] for prefix in _prefixes(scope) if prefix in self.index]
        return min(found, default=None)


def _prefixes(scope):
    """The scope itself and every prefix that ends just before a "[" or "." (a path boundary)."""
    yield scope
    for position, character in enumerate(scope):
        if character in "[." and position:
            yield scope[:position]
