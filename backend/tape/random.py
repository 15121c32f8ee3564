"""The engine's seeded generator: dropout draws from it, checkpointing saves and restores its state."""
import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed):
    global _generator
    _generator = np.random.default_rng(seed)


def generator():
    return _generator


def get_rng_state():
    return _generator.bit_generator.state


def set_rng_state(state):
    _generator.bit_generator.state = state
