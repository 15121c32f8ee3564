"""Errors for users: every problem carries the spec path it concerns and what to do about it."""


class SpecError(ValueError):
    """A spec that cannot be built: `problems` lists every {path, message} found, not just the first."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("; ".join(f"{p['path']}: {p['message']}" for p in self.problems))


class CapError(SpecError):
    """A spec over a size cap, refused before anything is allocated. `cap` names the cap."""

    def __init__(self, cap, limit, requested, path="spec", advice="make the model, batch or sequence smaller"):
        self.cap, self.limit, self.requested = cap, limit, requested
        self.message = (f"over the {cap} cap: needs {requested:,}, the cap is {limit:,} "
                        f"({requested / limit:.1f}x); {advice}")
        super().__init__([{"path": path, "message": self.message, "cap": cap}])
