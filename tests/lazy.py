"""A dict that builds each value the first time a test asks for it: under pytest-xdist a worker then pays only for the
models its own tests use, once, instead of every model for every worker."""


class Lazy(dict):
    def __init__(self, build):
        super().__init__()
        self._build = build

    def __missing__(self, key):
        self[key] = value = self._build(key)
        return value
