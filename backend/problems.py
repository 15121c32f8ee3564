"""{path, message} problems: the one collector every validator fills, capped, and the one way it becomes JSON.

Spec validation (models), checkpoint requests (planner), ledger configs and the API's body checks all record
what is wrong here, so one 400 lists everything at once. Only the first MAX_LISTED are kept, with a count of
all: a body with a hundred thousand bad layers gets a short answer, not a reply ten times its size. This module
imports nothing from the backend, so every package can import it.
"""
MAX_LISTED = 50


MAX_PATH_CHARACTERS = 200     # a path built from a sent key is cut here: an answer never echoes a huge key back


def join(path, key):
    """A problem's path: "batch" at the top level, "layers[3].out" below it."""
    return f"{path}.{key}" if path else key


class Problems(list):
    """The first MAX_LISTED problems found, in order; `count` is how many were found in all."""

    def __init__(self, problems=()):
        super().__init__()
        self.count = 0
        self.extend(problems)

    @classmethod
    def of(cls, problems):
        """`problems` itself when it is a Problems (its count kept), else a Problems of the given dicts."""
        return problems if isinstance(problems, cls) else cls(problems or ())

    def add(self, path, message, **extra):
        self.append({"path": path, "message": message, **extra})

    def append(self, problem):
        self.count += 1
        if len(self) < MAX_LISTED:
            super().append(problem)

    def extend(self, problems):
        before = self.count
        for problem in problems:
            self.append(problem)
        if isinstance(problems, Problems):
            self.count = before + problems.count      # it may have counted more than it listed

    def as_json(self):
        """{"problems": the listed ones, "problem_count": all of them} for an error reply."""
        return {"problems": list(self), "problem_count": self.count}


def unknown_field(problems, path, allowed):
    """The one sentence for a key nothing declares, wherever it was sent: a spec (/api/trace), a snapshot or session
    body (/api/snapshots, /api/session), a ledger query (/api/ledger)."""
    problems.add(str(path)[:MAX_PATH_CHARACTERS], "is not a field here; the fields here are " + ", ".join(sorted(allowed)))
