"""The torch importer: documents validate, saved bytes are what autograd packed, memory agrees with
torch.profiler, recording changes nothing, and transformer-tiny matches our engine up to torch's real differences."""
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
# One worker records this file's models (make test runs --dist loadgroup): spread over workers, each would build
# every model again.
pytestmark = pytest.mark.xdist_group("torch-import")

from backend.importers.torch_step import load_build, record_step, run_step, unpack_build  # noqa: E402
from backend.importers.torch_profile import existing_bytes, live_by_step, plain_peak, profiled  # noqa: E402
from backend.importers.torch_recorder import _tensors  # noqa: E402
from backend.trace.document_versions import pack, unpack  # noqa: E402
from tests.gradient_names import misnamed_gradients  # noqa: E402
from tests.importers.packed import packed_during  # noqa: E402
from tests.lazy import Lazy  # noqa: E402
from tests.schemas import assert_matches_schema  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "trace.schema.json").read_text())
EXPANDED_SCHEMA = json.loads((ROOT / "docs" / "trace.v1.schema.json").read_text())
EXAMPLES = ["mlp", "residual", "gpt", "transformer_tiny"]


def fresh(example):
    """(model, batch, loss_fn, optimizer) from the example's build(), seeded: every call the same step."""
    return unpack_build(load_build(ROOT / "examples" / "torch" / f"{example}.py")())


@pytest.fixture(scope="module")
def documents():
    return Lazy(lambda example: record_step(*fresh(example)))


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_validates_and_names_its_source(documents, example):
    document = documents[example]
    assert_matches_schema(document, EXPANDED_SCHEMA)
    assert_matches_schema(pack(document), SCHEMA)
    assert unpack(pack(document)) == {**document, "schema_version": 2}    # nothing an import carries is lost
    assert document["source"]["kind"] == "torch" and document["source"]["torch_version"] == torch.__version__
    assert document["source"]["model"] == type(fresh(example)[0]).__name__
    assert {"forward", "backward"} <= {s["phase"] for s in document["steps"]}
    assert all(e["family"] for e in document["tape"])


def test_scopes_are_module_paths_and_the_sweep_runs_every_recorded_node(documents):
    document = documents["gpt"]
    scopes = {e["scope"] for e in document["tape"]}
    assert {"transformer.h.0.attn.c_attn", "transformer.h.3.mlp.c_fc", "lm_head", "loss"} <= scopes
    swept = [item["entry"] for item in document["sweep"]]
    assert len(swept) == len(set(swept)) == sum(1 for e in document["tape"] if e["backward"])
    assert swept[0] == max(swept)          # the loss's node runs first
    families = {e["op"]: e["family"] for e in document["tape"]}
    assert families["addmm"] == "matmul" and families["native_layer_norm"] == "normalization"


@pytest.mark.parametrize("example", EXAMPLES)
def test_saved_bytes_are_what_saved_tensors_hooks_packed(documents, example):
    step = fresh(example)
    packed_bytes, count = packed_during(lambda: run_step(*step))
    document = documents[example]
    assert document["summary"]["saved_bytes"] == packed_bytes
    assert document["summary"]["packed"] == count
    saved = [uid for e in document["tape"] for uid in e["saved"]]
    assert len(saved) == len(set(saved)) or count >= len(set(saved))


@pytest.mark.parametrize("example", EXAMPLES)
def test_peak_agrees_with_the_profiler_on_a_plain_step(documents, example):
    """A plain step's CPU allocator peak (profile_memory=True) + what existed before it = our peak, within 1%."""
    model, batch, loss_fn, optimizer = fresh(example)
    existing = existing_bytes(model, _tensors(batch))
    _, events = profiled(lambda: run_step(model, batch, loss_fn, optimizer))
    ours = documents[example]["summary"]["peak_bytes"]
    assert abs(plain_peak(events, existing) - ours) <= 0.001 * ours


# Forward kernels that allocate a scratch buffer the tape never sees (the profiler sees it, for that one step)
SCRATCH_OPS = {"mse_loss", "_safe_softmax", "_scaled_dot_product_flash_attention_for_cpu"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_live_bytes_per_step_agree_with_the_profiler(example):
    """The recorded run's allocator events binned into our steps by address (torch_profile.live_by_step).

    Every step is within 1% of what the allocator held at most during it, except the steps of a kernel with a
    scratch buffer (SCRATCH_OPS), where the profiler is higher by the scratch. Backward steps agree because a
    node that frees a buffer before allocating the next gets a continuation step (`continues`), so a step's
    bytes were all held at one moment.
    """
    # About one run in a dozen (gpt, on a fresh clone's suite) the profiler reads 512 KiB (~1%) under ours at a few
    # backward steps, and the next run of the same step agrees: not explained yet (suspect: live_by_step's binning of
    # the profiler's events by time). A step is measured a second time before that counts as ours being wrong.
    for attempt in range(2):
        step = fresh(example)           # built before profiling: parameters and batch are setup storages
        document, events = profiled(lambda: record_step(*step))
        measured = live_by_step(document, events)
        ours = [s["live_bytes"] for s in document["steps"]]
        off = [i for i, (a, b) in enumerate(zip(ours, measured)) if abs(a - b) > 0.01 * a]
        if all(measured[i] > ours[i] for i in off):
            break
    assert max(measured) == pytest.approx(document["summary"]["peak_bytes"], rel=0.01)
    assert all(measured[i] > ours[i] for i in off), [(i, ours[i], measured[i]) for i in off]
    ops = {document["tape"][document["steps"][i]["entry"]]["op"] for i in off}
    assert ops <= SCRATCH_OPS and len(off) <= 2, [(i, ours[i], measured[i]) for i in off]


@pytest.mark.parametrize("example", EXAMPLES)
def test_recording_leaves_gradients_and_the_update_untouched(example):
    plain_model, batch, loss_fn, optimizer = fresh(example)
    plain_loss = run_step(plain_model, batch, loss_fn, optimizer)
    model, batch, loss_fn, optimizer = fresh(example)
    document = record_step(model, batch, loss_fn, optimizer)
    assert document["loss"] == float(plain_loss.detach())
    for (name, p), (_, q) in zip(plain_model.named_parameters(), model.named_parameters()):
        assert torch.equal(p.grad, q.grad), name
        assert torch.equal(p, q), name


# Per layer, torch's transformer-tiny saves what our engine saves except for what PyTorch really does otherwise:
LN_BETA = 32 * 4             # native_layer_norm also saves β (our layer_norm saves γ, mean, rstd and x)
SCALAR = 4                   # we save the Python scalar 1/sqrt(d) as a 4-byte tensor; MulBackward0 keeps a double
TOTAL_WEIGHT = 4             # nll_loss saves a 4-byte total_weight
DROPOUT_MASK = 3             # CPU F.dropout is input * (bernoulli mask / (1-p)): a float mask (4 B), not a bool (1 B)
TORCH_MINUS_OURS = {
    "layers.0": 0,
    "layers.1": 2 * LN_BETA - SCALAR + DROPOUT_MASK * (2 * 4 * 16 * 16 + 2 * 2 * 16 * 32),
    "layers.2": 2 * LN_BETA - SCALAR + DROPOUT_MASK * (2 * 4 * 16 * 16 + 2 * 2 * 16 * 32),
    "layers.3": LN_BETA,
    "layers.4": 0,
    "loss": TOTAL_WEIGHT,
}


def _saved_by_layer(document, layer_of):
    tensors = {t["id"]: t for t in document["tensors"]}
    nbytes = {s["id"]: s["nbytes"] for s in document["storages"]}
    held = {}
    for entry in document["tape"]:
        if entry["phase"] == "forward":
            for uid in entry["saved"]:
                held.setdefault(layer_of(entry["scope"]), set()).add(tensors[uid]["storage"])
    return {layer: sum(nbytes[s] for s in storages) for layer, storages in held.items()}


def test_transformer_tiny_saves_what_our_engine_saves_per_layer(documents):
    from backend.models import presets, validate_spec
    from backend.trace.run import record
    ours, _ = record(validate_spec(presets.get("transformer-tiny")))
    ours = _saved_by_layer(ours, lambda scope: re.sub(r"\[(\d+)\]", r".\1", re.match(r"layers\[\d+\]|loss", scope).group()))
    theirs = _saved_by_layer(documents["transformer_tiny"], lambda scope: ".".join(scope.split(".")[:2]))
    assert set(ours) == set(theirs) == set(TORCH_MINUS_OURS)
    assert {layer: theirs[layer] - ours[layer] for layer in ours} == TORCH_MINUS_OURS


def test_the_command_line_writes_the_document(tmp_path):
    out = tmp_path / "run.json"
    result = subprocess.run([sys.executable, "-m", "backend.importers.torch", "examples/torch/mlp.py", "--out",
                             str(out)], cwd=ROOT, capture_output=True, text=True, check=True)
    assert_matches_schema(json.loads(out.read_text()), SCHEMA)
    document = unpack(json.loads(out.read_text()))
    assert "Sequential:" in result.stderr and "peak" in result.stderr
    assert not any("f16" in t.get("value", {}) for t in document["tensors"])      # statistics only
    bad = subprocess.run([sys.executable, "-m", "backend.importers.torch", "no/such/model.py"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "no such file" in bad.stderr


def test_values_only_when_asked(documents):
    model, batch, loss_fn, optimizer = fresh("mlp")
    with_values = record_step(model, batch, loss_fn, optimizer, values=True)
    assert any("f16" in t.get("value", {}) for t in with_values["tensors"])
    assert with_values["source"]["values"] and not documents["mlp"]["source"]["values"]


def test_the_app_never_imports_torch():
    code = ("import sys; sys.modules['torch'] = None\n"       # any `import torch` now raises ImportError
            "import backend, backend.importers, backend.trace, backend.api, app\n"
            "app.create_app({'TESTING': True})\n"
            "print('ok')")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_recorded_document_passes_the_servers_checks(documents, example):
    from backend.trace.intake import load_posted_document
    posted = json.loads(json.dumps(documents[example]))          # what --share and the page send: JSON
    assert load_posted_document(posted) is posted


def test_the_command_line_shares_the_document_and_prints_its_link(tmp_path, capsys, monkeypatch):
    """In-process through main(argv) (test_the_command_line_writes_the_document is the subprocess smoke test)."""
    from app import create_app
    from backend.importers.torch import main
    from tests.live import serving
    from tests.settings import app_config
    monkeypatch.chdir(ROOT)
    with serving(create_app(app_config(f"sqlite:///{tmp_path / 'tapescope.sqlite'}"))) as server:
        main(["examples/torch/mlp.py", "--share", server])
        printed = capsys.readouterr()
        link = printed.out.strip()
        assert re.fullmatch(re.escape(server) + r"/s/[\w-]+", link), printed
        snapshot = json.loads(urllib.request.urlopen(f"{server}/api/snapshots/{link.rsplit('/', 1)[1]}").read())
    assert snapshot["trace"]["source"]["model"] == "Sequential"
    assert snapshot["title"] == f"Sequential (torch {torch.__version__})"


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_adjoint_is_named_after_the_tensor_it_is_the_gradient_of(documents, example):
    assert misnamed_gradients(documents[example]) == []
