"""The README's "Using the engine directly" example, run as written: it must keep working as the engine changes."""
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _engine_example():
    section = README.read_text().split("## Using the engine directly", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_engine_example_runs_and_prints_the_gradient_shape():
    namespace = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_engine_example(), str(README), "exec"), namespace)   # noqa: S102
    assert printed.getvalue() == "(1, 64)\n"
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        namespace["loss"].backward()        # the comment's promise: a second backward raises


def test_the_readme_forward_mode_example_runs_after_the_first():
    section = README.read_text().split("## Using the engine directly", 1)[1]
    first, forward = re.findall(r"```python\n(.*?)```", section, re.S)[:2]
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(first + forward, str(README), "exec"), namespace)   # noqa: S102
    assert namespace["tangent"].shape == (64, 1) and namespace["J"].shape == (64, 1, 64, 64)


def test_the_readme_double_backward_example_runs_after_the_first():
    section = README.read_text().split("## Using the engine directly", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    first, double = blocks[0], next(block for block in blocks if "create_graph=True" in block)
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(first + double, str(README), "exec"), namespace)   # noqa: S102
    w1 = namespace["w1"]
    assert w1.grad.shape == (1, 64) and namespace["Hv"].shape == (64, 1)
