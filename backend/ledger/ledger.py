"""One function from a LedgerConfig to the whole ledger: parameters, resident state, rows, totals, schedules, fit,
and one GPU's share of a parallel step (`per_gpu`, with Megatron's figure beside it) and what fits on the cluster."""
from backend.ledger import capacity, checkpoint, korthikanti
from backend.ledger.fits import fits_table
from backend.ledger.megatron import megatron
from backend.ledger.parallel import per_gpu
from backend.ledger.record import record_command
from backend.ledger.config import FIELDS
from backend.models.caps import cap
from backend.ledger.params import param_count, param_tensors
from backend.ledger.resident import resident_state
from backend.ledger.rows import head_rows, layer_rows, network_rows, residual_unit_bytes, total_bytes

ATTENTION_KINDS = ("naive", "flash")


def _fixed_bytes(config):
    """What no checkpoint schedule removes: the head and the once-per-network rows."""
    return total_bytes(head_rows(config)) + total_bytes(network_rows(config))


def activation_bytes(config):
    """Every saved byte of one forward: L layers, the head and the once-per-network rows."""
    return config.layers * total_bytes(layer_rows(config)) + _fixed_bytes(config)


def _peak_at(k):
    def peak(config):
        return checkpoint.peak_bytes(k, config.layers, total_bytes(layer_rows(config)),
                                     residual_unit_bytes(config), _fixed_bytes(config))
    return peak


def _fit(config, resident_bytes, bytes_of):
    fixed, per_sequence = capacity.affine_in_batch(bytes_of, config)
    largest = capacity.max_batch(config.device_bytes, resident_bytes, fixed, per_sequence)
    return fixed, per_sequence, min(largest, batch_limit(config))


def batch_limit(config):
    """The largest batch the batch field accepts at this seq: a max batch above it could not be typed in."""
    return min(int(FIELDS["batch"].high), cap("ledger_tokens") // config.seq)


def _attention_variant(config, attention, unit):
    rows = layer_rows(config, attention)
    return {"rows": [row.to_dict(unit) for row in rows], "per_layer_bytes": total_bytes(rows)}


def build_ledger(config):
    """The ledger as a JSON-ready dict; the issue's keys first, the rest for the page."""
    layers, unit = config.layers, residual_unit_bytes(config)
    resident = resident_state(config, param_tensors(config))
    rows = layer_rows(config)
    per_layer = total_bytes(rows)
    heads, network = head_rows(config), network_rows(config)
    fixed = total_bytes(heads) + total_bytes(network)
    activation = layers * per_layer + fixed

    points = checkpoint.checkpoint_points(layers, per_layer, unit, fixed)
    for point in points:
        point["max_batch"] = _fit(config, resident["total_bytes"], _peak_at(point["k"]))[2]
    curve = checkpoint.checkpoint_points(layers, per_layer, unit, fixed, ks=range(1, layers + 1))
    fixed_per_batch, per_sequence, largest = _fit(config, resident["total_bytes"], activation_bytes)

    return {
        "params": param_count(config),
        "resident_bytes": resident["total_bytes"],
        "per_layer_bytes": per_layer,
        "rows": [row.to_dict(unit) for row in rows],
        "activation_bytes": activation,
        "head_bytes": total_bytes(heads),
        "per_token_bytes": layers * per_layer / config.tokens,
        "checkpoint": points,
        "k_star": checkpoint.k_star(layers, per_layer, unit),
        "max_batch": largest,
        "max_batch_capped": largest == batch_limit(config),     # more would fit than the batch field takes

        "config": config.to_dict(),
        "unit_bytes": unit,
        "resident": resident,
        "head_rows": [row.to_dict(unit) for row in heads],
        "network_rows": [row.to_dict(unit) for row in network],
        "network_bytes": total_bytes(network),
        "per_token_layer_bytes": per_layer / config.tokens,
        "per_token_total_bytes": activation / config.tokens,
        "per_attention": {kind: _attention_variant(config, kind, unit) for kind in ATTENTION_KINDS},
        "checkpoint_curve": curve,
        "k_best": min(curve, key=lambda point: (point["peak_bytes"], point["compute_factor"]))["k"],
        "device_bytes": config.device_bytes,
        "per_sequence_bytes": per_sequence,
        "batch_curve": capacity.batch_curve(config.device_bytes, resident["total_bytes"], fixed_per_batch,
                                            per_sequence, largest),
        "korthikanti": korthikanti.compare(config),
        "per_gpu": {**per_gpu(config), "megatron": megatron(config), "record": record_command(config)},
        "fits": fits_table(config),
    }

