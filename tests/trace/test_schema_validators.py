"""The server asks jsonschema-rs whether a posted document matches its schema (backend/trace/intake.py) and asks
jsonschema only when it says no (to word what is wrong); so a yes from jsonschema-rs must be jsonschema's yes, and
its no, jsonschema's no but for a NaN (see below). Held to jsonschema on the raw schema files as written (not the
intake's inlined copy): every committed fixture, and hundreds of documents mutated at random from the small ones (a
value swapped for one of another type or range, a key dropped or added, a list cut or grown)."""
import json
import math
import random
from contextlib import contextmanager
from pathlib import Path

import jsonschema
import pytest

from backend.trace.document_versions import unpack, upgrade
from backend.trace.intake import SCHEMA_PATHS, schema_valid
from tests.trace.test_fixtures_open import DOCUMENT_FILES, posted_body, rank_documents

ORACLES = {version: jsonschema.Draft202012Validator(json.loads(Path(path).read_text()))
           for version, path in SCHEMA_PATHS.items()}
REPLACEMENTS = [None, True, False, "x", "", -1, 0, 1, 1.5, -0.5, 2**70, -2**70, [], [1], {}, {"a": 1}, math.nan]
MUTATIONS_PER_DOCUMENT = 120
MUTATED_FILES = {"seed-tape.v2.json", "mlp.run.json"}   # the engine's and the recorder's, small: jsonschema takes
# ~0.5 s to accept the two-rank run's records, and a mutation is often still valid


def documents():
    """(label, version, document) for each fixture: as version 2, and its records expanded as version 1 checks them."""
    found = []
    for name in DOCUMENT_FILES:
        for rank, document in enumerate(rank_documents(posted_body(name))):
            packed = json.loads(json.dumps(upgrade(document)))
            found.append((f"{name}#{rank}.v2", 2, packed))
            found.append((f"{name}#{rank}.v1", 1, {**json.loads(json.dumps(unpack(packed))), "schema_version": 1}))
    return found


DOCUMENTS = documents()


def places(node, path=()):
    """Every (path, value) in the document, the root's children first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield path + (key,), value
        yield from places(value, path + (key,))


def holds_nan(document):
    return any(isinstance(value, float) and math.isnan(value) for _, value in places(document))


@contextmanager
def mutated(document, paths, rng):
    """`document` with one change at a random place of `paths` (the change in words), put back on leaving."""
    path = rng.choice(paths)
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    before = parent[key]
    change = rng.choice(["replace", "replace", "replace", "drop", "add", "cut", "grow"])
    if change == "drop" and isinstance(parent, dict):
        del parent[key]
    elif change == "add" and isinstance(parent, dict):
        parent["unexpected_field"] = rng.choice(REPLACEMENTS)
    elif change == "cut" and isinstance(before, list):
        parent[key] = before[: rng.randrange(len(before) + 1)]
    elif change == "grow" and isinstance(before, list):
        parent[key] = before + [rng.choice(REPLACEMENTS + before[:1])]
    else:
        change = "replace"
        parent[key] = rng.choice(REPLACEMENTS)
    try:
        yield f"{change} at {'/'.join(map(str, path))}"
    finally:
        parent.pop("unexpected_field", None) if isinstance(parent, dict) else None
        parent[key] = before


MUTATED = [found for found in DOCUMENTS if found[0].partition("#")[0] in MUTATED_FILES]


@pytest.mark.parametrize("label, version, document", MUTATED, ids=[label for label, _, _ in MUTATED])
def test_the_fast_validator_gives_jsonschemas_verdict_on_mutated_documents(label, version, document):
    rng = random.Random(label)
    paths = [path for path, _ in places(document)]
    before = json.dumps(document, sort_keys=True)
    verdicts = {True: 0, False: 0}
    for _ in range(MUTATIONS_PER_DOCUMENT):
        with mutated(document, paths, rng) as how:
            expected = ORACLES[version].is_valid(document)
            fast = schema_valid(document, version)
            if fast != expected:
                # JSON has no NaN, so jsonschema-rs calls it no number; Python's json reads one, jsonschema takes it
                # as a number, and so does the intake: it asks jsonschema whenever the fast validator refuses
                assert not fast and holds_nan(document), (label, how)
            verdicts[expected] += 1
    assert json.dumps(document, sort_keys=True) == before, "a mutation was not put back"
    assert min(verdicts.values()) >= 20, verdicts       # both verdicts were put to the test
