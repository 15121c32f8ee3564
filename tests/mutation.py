"""Mutating valid request bodies for fuzz tests: one edit somewhere inside a JSON value (the fuzzers' shared helper)."""
import copy

AWKWARD_VALUES = [None, True, False, -1, 0, 1, 2, 1.5, -0.0, 1e308, 10**12, 2**63, "", "relu", "linear", "x" * 300,
                  "\ud800", "é\u0000", [], [1, "a"], [{}], {}, {"type": "linear"}, {"type": "repeat", "times": 2},
                  {"policy": "sqrt"}]
ADDED_KEYS = ["extra", "type", "times", "layers", "out", "\ud800"]


def mutate_once(value, rng, awkward=AWKWARD_VALUES, grow=True):
    """A copy of `value` with one field, at any depth, replaced by an awkward value or removed; with `grow`,
    sometimes a field added or a list element duplicated instead."""
    value = copy.deepcopy(value)
    node = value
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return value
        key = rng.choice(keys)
        child = node[key]
        if isinstance(child, (dict, list)) and child and rng.random() < 0.6:
            node = child
            continue
        roll = rng.random()
        if roll < 0.15 and isinstance(node, dict):
            del node[key]
        elif grow and roll < 0.25 and isinstance(node, dict):
            node[rng.choice(ADDED_KEYS)] = rng.choice(awkward)
        elif grow and roll < 0.35 and isinstance(node, list):
            node.insert(key, copy.deepcopy(node[key]))
        else:
            node[key] = rng.choice(awkward)
        return value


def mutated(value, rng, awkward=AWKWARD_VALUES):
    """One to three edits (mostly one)."""
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        value = mutate_once(value, rng, awkward)
    return value
