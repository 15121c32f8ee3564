"""A synthetic trace document of a chosen node count, shaped like the real one, for timing the explorer page."""
FAMILIES = ["matmul", "binary", "elementwise", "reduce", "normalization", "movement"]
OPS = {"matmul": "matmul", "binary": "add", "elementwise": "relu", "reduce": "sum", "normalization": "layernorm",
       "movement": "reshape"}
NBYTES = 4096


def _tensor(tensor_id, name, kind, born, freed=None, saved_by=(), produced_by=None, scope=None):
    return {"id": tensor_id, "name": name, "kind": kind, "shape": [32, 32], "dtype": "float32", "nbytes": NBYTES,
            "storage": tensor_id, "address": hex(0x7F000000 + tensor_id * NBYTES), "born": born, "freed": freed,
            "saved_by": list(saved_by), "produced_by": produced_by, "scope": scope,
            "value": {"min": -1.0, "max": 1.0, "mean": 0.0, "norm": 1.0}}


def synthetic_trace(total_nodes: int) -> dict:
    """A chain of ops with a parameter leaf on every fourth op and a skip edge every seventh: `total_nodes` in all."""
    op_count = round(total_nodes * 0.8)
    leaf_count = total_nodes - op_count
    leaves = [{"id": f"t{i}", "tensor": i, "kind": "param" if i else "input", "name": f"p{i}" if i else "x"}
              for i in range(leaf_count)]
    output_of = lambda entry: leaf_count + entry  # noqa: E731
    steps_total = 2 * op_count
    tape, nodes, edges, steps, sweep = [], [], [], [], []
    tensors = [_tensor(i, leaf["name"], leaf["kind"], 0, None, ()) for i, leaf in enumerate(leaves)]
    next_leaf = 1
    for entry in range(op_count):
        family = FAMILIES[entry % len(FAMILIES)]
        inputs = [output_of(entry - 1) if entry else 0]
        if entry % 4 == 0 and next_leaf < leaf_count:
            inputs.append(next_leaf)
            next_leaf += 1
        if entry % 7 == 6:
            inputs.append(output_of(entry - 5))
        tape.append({"index": entry, "op": OPS[family], "family": family, "backward": f"{OPS[family].title()}Backward",
                     "inputs": inputs, "output": output_of(entry), "saved": inputs[:1], "scope": f"layers[{entry // 10}]",
                     "flops": 1000, "why": "synthetic: saves its first input.", "attrs": {}, "phase": "forward"})
        nodes.append({"id": f"e{entry}", "entry": entry, "op": OPS[family], "family": family, "scope": f"layers[{entry // 10}]"})
        for tensor in inputs:
            source = f"t{tensor}" if tensor < leaf_count else f"e{tensor - leaf_count}"
            edges.append({"source": source, "target": f"e{entry}", "tensor": tensor, "nbytes": NBYTES})
        released = steps_total - 1 - entry
        tensors.append(_tensor(output_of(entry), f"t{entry}", "activation", entry,
                               released if entry < op_count - 1 else None, [entry + 1] if entry < op_count - 1 else [],
                               entry, f"layers[{entry // 10}]"))
    for tensor in tensors[:leaf_count]:
        tensor["saved_by"] = [e["index"] for e in tape if e["inputs"][0] == tensor["id"]]
    for step in range(steps_total):
        forward = step < op_count
        entry = step if forward else steps_total - 1 - step
        activation = NBYTES * (step + 1 if forward else steps_total - step)
        by_kind = {"input": NBYTES, "param": NBYTES * (leaf_count - 1), "activation": activation,
                   "grad": 0 if forward else NBYTES * 2, "optimizer": 0}
        steps.append({"index": step, "phase": "forward" if forward else "backward", "entry": entry,
                      "live_bytes": sum(by_kind.values()), "by_kind": by_kind})
        if not forward:
            item = tape[entry]
            sweep.append({"step": step, "entry": entry, "op": item["op"], "backward": item["backward"],
                          "adjoint": {"tensor": item["output"], "shape": [32, 32], "min": -1, "max": 1, "mean": 0, "norm": 1},
                          "reads": item["saved"], "why": item["why"],
                          "contributions": [{"to": t, "grad": t, "shape": [32, 32]} for t in item["inputs"]],
                          "accumulations": [], "freed": item["saved"], "ready": [entry - 1] if entry else [], "pending": {}})
    peak = max(steps, key=lambda s: s["live_bytes"])
    return {
        "schema_version": 1, "engine_version": "synthetic", "spec": {"name": f"synthetic-{total_nodes}"}, "loss": 0.0,
        "layers": [], "tensors": tensors, "storages": [], "tape": tape, "steps": steps, "sweep": sweep,
        "dependencies": {str(e): 1 for e in range(op_count)},
        "graph": {"nodes": nodes, "leaves": leaves, "edges": edges},
        "summary": {"peak_bytes": peak["live_bytes"], "peak_step": peak["index"], "saved_bytes": NBYTES * op_count,
                    "by_kind_at_peak": peak["by_kind"], "forward_end_step": op_count - 1, "steps": steps_total,
                    "entries": op_count, "forward_flops": 1000 * op_count, "measured_peak_bytes": None},
    }
