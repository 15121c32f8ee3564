"""Issue 8, "Cross-check at small scale": the ledger's rows for one layer are the storages the engine's tape saves.

transformer-tiny is traced with naive and with efficient attention. For a block ("layers[1]", and "layers[2]"
too), the storages saved by the tape entries scoped to it (parameters excluded) must equal the ledger's
`layer_rows` for the same dims: the same (shape, dtype, bytes) multiset, the same total, the same count, and,
row for row in forward order, each row's op among the ops that save that storage and one saving entry per
`saved_by` site. The one storage a layer shares with another is the naive causal mask: the ledger lists it
once per network (`network_rows`), and the test asserts that this is the only shared storage.
"""
from collections import Counter

import pytest

from backend.ledger import parse_config
from backend.ledger.config import DTYPE_NAMES
from backend.ledger.rows import layer_rows, network_rows, total_bytes
from backend.models import presets
from backend.driver import trace_spec

LEDGER_ATTENTION = {"naive": "naive", "efficient": "flash"}     # engine impl -> ledger attention
LEDGER_DTYPE = {name: key for key, name in DTYPE_NAMES.items()}  # "float32" -> "fp32"
LAYERS = ("layers[1]", "layers[2]")                               # layers[0] is the embedding

# What the cross-check pins for transformer-tiny (b=2, s=16, h=32, a=4, MLP 128, fp32, dropout on).
# (rows per layer, bytes per layer); efficient's heads are merged by a view since torch's layout (was 18, 72,704)
EXPECTED = {"naive": (20, 86_532), "efficient": (17, 68_608)}
CAUSAL_MASK_BYTES = 16 * 16                                       # one bool (s, s) storage for the network


def tiny_spec(impl):
    spec = presets.get("transformer-tiny")
    for layer in spec["layers"]:
        if layer["type"] == "transformer_block":
            layer["impl"] = impl
    return spec


def ledger_config(spec, impl):
    """A ledger config with the spec's dims, read from the spec rather than restated."""
    embedding = next(layer for layer in spec["layers"] if layer["type"] == "embedding")
    blocks = [layer for layer in spec["layers"] if layer["type"] == "transformer_block"]
    assert len({(b["heads"], b["mlp_ratio"], b["dropout"] > 0, b["impl"]) for b in blocks}) == 1
    block = blocks[0]
    head = spec["layers"][-1]
    return parse_config({
        "layers": len(blocks), "hidden": embedding["dim"], "heads": block["heads"],
        "mlp_ratio": block["mlp_ratio"], "vocab": spec["input"]["vocab"], "batch": spec["batch"],
        "seq": spec["input"]["seq"], "dtype": LEDGER_DTYPE[spec["dtype"]], "attention": LEDGER_ATTENTION[impl],
        "dropout": block["dropout"] > 0,
        "tied_embeddings": not (head["type"] == "linear" and head["out"] == spec["input"]["vocab"]),
    })


def in_layer(scope, layer):
    return scope is not None and (scope == layer or scope.startswith(layer + "."))


def saved_storages(doc, select):
    """{storage id: {"key": (shape, dtype, nbytes), "names", "ops", "entries"}} for non-parameter tensors saved
    by the tape entries whose scope passes `select`, in order of first saving (tape order, then saved order). A
    storage's key is its first saved view; a later one may see it in another shape (fused attention's output per
    head, then heads merged for the projection: a view), never in other bytes or another dtype."""
    tensors = {tensor["id"]: tensor for tensor in doc["tensors"]}
    storage_bytes = {storage["id"]: storage["nbytes"] for storage in doc["storages"]}
    found = {}
    for entry in doc["tape"]:
        if not select(entry["scope"]):
            continue
        for tensor_id in entry["saved"]:
            tensor = tensors[tensor_id]
            if tensor["kind"] == "param":
                continue
            key = (tuple(tensor["shape"]), tensor["dtype"], tensor["nbytes"])
            # A row is a whole storage seen through one view: the saved view must cover it.
            assert tensor["nbytes"] == storage_bytes[tensor["storage"]], (
                f"{tensor['name']} (saved by {entry['op']} #{entry['index']}) is {tensor['nbytes']} B of a "
                f"{storage_bytes[tensor['storage']]} B storage")
            item = found.setdefault(tensor["storage"], {"key": key, "names": [], "ops": [], "entries": []})
            assert item["key"][1:] == key[1:], f"storage {tensor['storage']} saved as {item['key']} and as {key}"
            item["names"].append(tensor["name"])
            item["ops"].append(entry["op"])
            item["entries"].append(entry["index"])
    return found


def row_key(row):
    return (tuple(row.shape), row.dtype, row.bytes)


def describe_difference(ledger, engine):
    """The two multisets' differences, each key with the ledger row names or engine tensors it stands for."""
    ledger_counts = Counter(row_key(row) for row in ledger)
    engine_counts = Counter(item["key"] for item in engine)
    lines = []
    for key, count in (ledger_counts - engine_counts).items():
        names = [row.name for row in ledger if row_key(row) == key]
        lines.append(f"  ledger only ×{count}: {key} ({', '.join(names)})")
    for key, count in (engine_counts - ledger_counts).items():
        names = [f"{name} by {op}" for item in engine if item["key"] == key
                 for name, op in zip(item["names"], item["ops"])]
        lines.append(f"  engine only ×{count}: {key} ({', '.join(names)})")
    return "\n".join(lines)


@pytest.fixture(scope="module", params=sorted(LEDGER_ATTENTION))
def traced(request):
    spec = tiny_spec(request.param)
    return request.param, trace_spec(spec, measure=False), ledger_config(spec, request.param)


def split_shared(doc, layer):
    """The layer's saved storages, split into its own and those another scope's tape entries also save."""
    mine = saved_storages(doc, lambda scope: in_layer(scope, layer))
    elsewhere = saved_storages(doc, lambda scope: not in_layer(scope, layer))
    own = [item for storage, item in mine.items() if storage not in elsewhere]
    shared = {storage: item for storage, item in mine.items() if storage in elsewhere}
    return own, shared


@pytest.mark.parametrize("layer", LAYERS)
def test_the_only_storage_a_layer_shares_is_the_naive_causal_mask(traced, layer):
    impl, doc, config = traced
    _, shared = split_shared(doc, layer)
    mask_rows = [row for row in network_rows(config) if row.name == "attn.causal_mask"]
    if impl == "naive":
        assert len(mask_rows) == 1 and row_key(mask_rows[0]) == ((16, 16), "bool", CAUSAL_MASK_BYTES)
        assert [item["key"] for item in shared.values()] == [row_key(mask_rows[0])], shared
        (mask,) = shared.values()
        assert set(mask["ops"]) == {"masked_fill"} and mask_rows[0].op == "masked_fill"
        # One storage, saved once by each block's masked_fill.
        every_saver = saved_storages(doc, lambda scope: scope is not None)
        (storage,) = shared
        assert [op for op in every_saver[storage]["ops"]] == ["masked_fill"] * config.layers
    else:
        assert shared == {} and mask_rows == []


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_rows_equal_the_engines_saved_storages(traced, layer):
    impl, doc, config = traced
    own, shared = split_shared(doc, layer)
    rows = layer_rows(config)
    difference = describe_difference(rows, own)
    assert not difference, f"{impl} attention, {layer}: ledger layer rows ≠ engine saved storages\n{difference}"
    assert total_bytes(rows) == sum(item["key"][2] for item in own)
    assert len(rows) == len(own)
    assert (len(rows), total_bytes(rows)) == EXPECTED[impl]

    # With the shared storage put back: layer rows + the network's mask row = everything the layer saves.
    mask_rows = [row for row in network_rows(config) if row.name == "attn.causal_mask"]
    everything = own + list(shared.values())
    difference = describe_difference(rows + mask_rows, everything)
    assert not difference, f"{impl} attention, {layer}: layer rows + mask row ≠ engine saved storages\n{difference}"
    assert total_bytes(rows + mask_rows) == sum(item["key"][2] for item in everything)
    assert total_bytes(rows + mask_rows) == EXPECTED[impl][1] + (CAUSAL_MASK_BYTES if impl == "naive" else 0)


@pytest.mark.parametrize("layer", LAYERS)
def test_row_for_row_in_forward_order(traced, layer):
    """Each ledger row is the engine storage first saved at the same position, by the op the row names, with
    one saving tape entry per `saved_by` site (ln1's output: the q, k and v matmuls)."""
    impl, doc, config = traced
    own, _ = split_shared(doc, layer)
    rows = layer_rows(config)
    pairs = list(zip(rows, own))
    mismatched = [
        f"  {row.name}: ledger {row_key(row)} {row.op} ×{len(row.saved_by)}; "
        f"engine {item['key']} {'/'.join(sorted(set(item['ops'])))} ×{len(item['entries'])} ({item['names'][0]})"
        for row, item in pairs
        if row_key(row) != item["key"] or row.op not in item["ops"] or len(row.saved_by) != len(item["entries"])]
    assert len(rows) == len(own) and not mismatched, (
        f"{impl} attention, {layer}: {len(rows)} rows vs {len(own)} storages\n" + "\n".join(mismatched))
