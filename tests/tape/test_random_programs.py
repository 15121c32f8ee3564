"""Random programs over the public ops (tests/tape/programs.py): every leaf gradient against finite differences,
and against PyTorch when it is installed. A failure names the program and prints it as a script to paste.

    .venv/bin/python -m pytest "tests/tape/test_random_programs.py::test_gradients_match_finite_differences[17]"
    .venv/bin/python -m tests.tape.programs 17          # print program 17
"""
import numpy as np
import pytest

from backend.tape import gradcheck
from tests.tape.programs import build, ours, torch_lib

PROGRAMS = 300


def _compile_ours(program):
    leaves, forward = program.compile(ours())
    for (name, _), leaf in zip(program.leaves, leaves):
        leaf.name = name                    # gradcheck's message names the input
    return leaves, forward


def _fail(program, what, error=None):
    detail = f"{type(error).__name__}: {error}\n\n" if error is not None else ""
    return AssertionError(f"program {program.index} {what}\n{detail}{program.text()}")


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_gradients_match_finite_differences(index):
    program = build(index)
    leaves, forward = _compile_ours(program)
    try:
        gradcheck(forward, leaves)
    except Exception as error:      # a crash is as much a finding as a wrong gradient: show the program
        raise _fail(program, "disagrees with finite differences", error) from error


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_values_and_gradients_match_pytorch(index):
    torch = pytest.importorskip("torch")
    program = build(index)
    leaves, forward = _compile_ours(program)
    torch_leaves, torch_forward = program.compile(torch_lib())
    try:
        expected = torch_forward(*torch_leaves)
        weight = np.random.default_rng(program.seed).standard_normal(expected.shape)
        (expected * torch.tensor(weight)).sum().backward()
    except Exception as error:      # the generator's fault: it must only write programs PyTorch accepts
        raise _fail(program, "is refused by PyTorch (fix the generator)", error) from error
    try:
        out = forward(*leaves)
        np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-7, atol=1e-9, err_msg="output")
        (out * weight).sum().backward()
        for (name, _), mine, reference in zip(program.leaves, leaves, torch_leaves):
            if not reference.requires_grad:
                continue
            theirs = np.zeros(reference.shape) if reference.grad is None else reference.grad.numpy()
            np.testing.assert_allclose(np.zeros(reference.shape) if mine.grad is None else np.asarray(mine.grad),
                                       theirs, rtol=1e-7, atol=1e-9, err_msg=f"{name}.grad (ours, then torch)")
    except Exception as error:
        raise _fail(program, "disagrees with PyTorch", error) from error
