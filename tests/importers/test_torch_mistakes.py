"""A user's mistake in MODEL_FILE is one sentence from the command line naming what to change, not a traceback."""
import re
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")

from backend.importers.torch import main  # noqa: E402

HEADER = "import torch\nfrom torch import nn\n"
MISTAKES = {
    "frozen": ("""
        def build():
            model = nn.Linear(4, 1).requires_grad_(False)
            return model, (torch.randn(2, 4), torch.randn(2, 1)), nn.functional.mse_loss
        """, r"every parameter of Linear is frozen \(requires_grad=False\).*model\.requires_grad_\(True\)"),
    "output_not_a_loss": ("""
        def build():
            return nn.Linear(4, 3), torch.randn(2, 4)
        """, r"the model's output is a tensor of shape \[2, 3\], not a loss: return a scalar"),
    "loss_not_reduced": ("""
        def build():
            return nn.Linear(4, 1), (torch.randn(2, 4), torch.randn(2, 1)), nn.MSELoss(reduction="none")
        """, r"loss_fn returned a tensor of shape \[2, 1\], not a scalar: reduce it"),
    "cuda": ("""
        def build():
            return nn.Linear(4, 1).cuda(), torch.randn(2, 4)
        """, r"build\(\) put the model or a tensor on CUDA \(\.cuda\(\) or \.to\('cuda'\)\), but this machine has no "
             r"CUDA device: record on the CPU"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_is_one_sentence_naming_what_to_change(tmp_path, mistake):
    if mistake == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA: .cuda() is no mistake here")
    code, said = MISTAKES[mistake]
    model_file = tmp_path / f"{mistake}.py"
    model_file.write_text(HEADER + textwrap.dedent(code))
    with pytest.raises(SystemExit) as stopped:
        main([str(model_file), "--out", str(tmp_path / "run.json")])
    message = stopped.value.code
    assert isinstance(message, str) and "\n" not in message, message
    assert re.search(said, message), message
    assert not (tmp_path / "run.json").exists()
