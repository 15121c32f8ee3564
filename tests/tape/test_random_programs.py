"""Random programs over the public ops (tests/tape/programs.py): every leaf gradient against finite differences,
and against PyTorch when it is installed, as are forward mode (jvp) and both Hessian-vector products. Leaves come
C-ordered, Fortran-ordered or strided, and programs write in place on views of them. A failure names the program
and prints it as a script to paste.

    .venv/bin/python -m pytest "tests/tape/test_random_programs.py::test_gradients_match_finite_differences[17]"
    .venv/bin/python -m tests.tape.programs 17          # print program 17
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import gradcheck, hvp, jvp
from tests.tape.program_ops import FAMILIES
from tests.tape.programs import build, ours, torch_lib

PROGRAMS = 300
# Second order runs on every family whose ops record their vjp: layer_norm, rms_norm, cross_entropy and attention
# have fused vjps that refuse create_graph by design (each says so; test_double_backward checks it).
SECOND_ORDER = {**FAMILIES, **{family: False for family in (
    "norm", "loss", "cross_entropy_options", "attention", "attention_causal_rect", "attention_v_only")}}


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


def _on_both(index, families=None):
    """torch, program `index` and its leaves and forward compiled on our engine and on torch (skips without it)."""
    torch = pytest.importorskip("torch")
    program = build(index) if families is None else build(index, families)
    return (torch, program, *_compile_ours(program), *program.compile(torch_lib()))


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_values_and_gradients_match_pytorch(index):
    torch, program, leaves, forward, torch_leaves, torch_forward = _on_both(index)
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


def _weighted(forward, others, weight, lib_sum):
    """The program as a scalar function of its first leaf (always a parameter), the other leaves held fixed."""
    return lambda x: lib_sum(forward(x, *others) * weight)


def _direction(program, shape, salt):
    return np.random.default_rng(program.seed + salt).standard_normal(shape)


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_jvp_matches_pytorch(index):
    torch, program, leaves, forward, torch_leaves, torch_forward = _on_both(index)
    grad_leaves = [i for i, leaf in enumerate(torch_leaves) if leaf.requires_grad]
    tangents = [_direction(program, torch_leaves[i].shape, i) for i in grad_leaves]

    def of_grad_leaves(lib_leaves, call):
        def fn(*varying):
            args = list(lib_leaves)
            for i, value in zip(grad_leaves, varying):
                args[i] = value
            return call(*args)
        return fn

    try:
        with torch.no_grad():
            primals = [torch_leaves[i].detach() for i in grad_leaves]
        expected_out, expected = torch.func.jvp(of_grad_leaves(torch_leaves, torch_forward), tuple(primals),
                                                tuple(torch.tensor(t) for t in tangents))
    except Exception as error:
        raise _fail(program, "is refused by torch.func.jvp (fix the generator)", error) from error
    try:
        out, tangent = jvp(of_grad_leaves(leaves, forward), tuple(leaves[i] for i in grad_leaves), tuple(tangents))
        np.testing.assert_allclose(out.data, expected_out.numpy(), rtol=1e-7, atol=1e-9, err_msg="output")
        np.testing.assert_allclose(tangent.data, expected.numpy(), rtol=1e-7, atol=1e-9,
                                   err_msg="tangent (ours, then torch)")
    except Exception as error:
        raise _fail(program, "has a tangent unlike PyTorch's", error) from error


@pytest.mark.parametrize("mode", ["reverse-over-reverse", "forward-over-reverse"])
@pytest.mark.parametrize("index", range(PROGRAMS))
def test_hvp_matches_pytorch(index, mode):
    """H·v for the first leaf, against torch.autograd.functional.hvp; a gradient constant in that leaf (a linear
    or relu-gated program) has H = 0 in both."""
    torch, program, leaves, forward, torch_leaves, torch_forward = _on_both(index, SECOND_ORDER)
    expected_out = torch_forward(*torch_leaves)
    weight = np.random.default_rng(program.seed).standard_normal(tuple(expected_out.shape))
    direction = _direction(program, torch_leaves[0].shape, 99)
    try:
        torch_fn = _weighted(torch_forward, torch_leaves[1:], torch.tensor(weight), torch.sum)
        _, expected = torch.autograd.functional.hvp(torch_fn, torch_leaves[0].detach(), torch.tensor(direction))
    except Exception as error:
        raise _fail(program, "is refused by torch.autograd.functional.hvp (fix the generator)", error) from error
    try:
        ours_fn = _weighted(forward, leaves[1:], weight, lambda x: x.sum())
        product = hvp(ours_fn, leaves[0], direction, mode=mode)
        np.testing.assert_allclose(product, expected.numpy(), rtol=1e-7, atol=1e-9, err_msg="H·v (ours, then torch)")
    except Exception as error:
        raise _fail(program, f"has an H·v ({mode}) unlike PyTorch's", error) from error


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_double_backward_matches_pytorch(index):
    """grad with create_graph, then grad of ⟨first gradient, u⟩ for the first leaf: the first gradient has a
    history exactly when torch's has one (relu's gate is a zero-slope function of its output, so a relu-gated
    program keeps one; a linear one has none), and the second gradient is torch's (zeros where torch's is)."""
    torch, program, leaves, forward, torch_leaves, torch_forward = _on_both(index, SECOND_ORDER)
    expected_out = torch_forward(*torch_leaves)
    weight = np.random.default_rng(program.seed).standard_normal(tuple(expected_out.shape))
    probe = _direction(program, torch_leaves[0].shape, 7)
    (torch_first,) = torch.autograd.grad((expected_out * torch.tensor(weight)).sum(), torch_leaves[0],
                                         create_graph=True, allow_unused=True)
    expected = None
    if torch_first is not None and torch_first.requires_grad:
        (expected,) = torch.autograd.grad((torch_first * torch.tensor(probe)).sum(), torch_leaves[0],
                                          allow_unused=True)
    try:
        out = forward(*leaves)
        (first,) = T.grad((out * weight).sum(), leaves[0], create_graph=True, allow_unused=True)
        assert (first is None) == (torch_first is None), f"first gradient: ours {first}, torch {torch_first}"
        if first is None:
            return
        np.testing.assert_allclose(first.data, torch_first.detach().numpy(), rtol=1e-7, atol=1e-9,
                                   err_msg="first gradient (ours, then torch)")
        assert first.requires_grad == torch_first.requires_grad, (
            f"the first gradient requires grad: ours {first.requires_grad}, torch {torch_first.requires_grad}")
        if expected is not None:
            (second,) = T.grad((first * probe).sum(), leaves[0], allow_unused=True)
            assert (second is None) == (expected is None), f"second gradient: ours {second}, torch {expected}"
            if second is not None:
                np.testing.assert_allclose(second.data, expected.numpy(), rtol=1e-7, atol=1e-9,
                                           err_msg="second gradient (ours, then torch)")
    except Exception as error:
        raise _fail(program, "has a double backward unlike PyTorch's", error) from error
