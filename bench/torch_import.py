"""Recording overhead of the torch importer: recorded step time / plain step time (goal ≤ 3×), document size, and
what the server's check of a posted document costs (load_posted_document) against parsing its JSON; then the
checkpoint what-ifs: per schedule, torch's measured peak (the checkpointed step, recorded) against our planner's
prediction from the plain document alone (goal: within 2%), for the whole step and before the optimizer's update.

    .venv/bin/python bench/torch_import.py          (needs torch==2.13.0 in .venv)
"""
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.importers.torch import load_build, record_step, run_step, unpack_build  # noqa: E402
from backend.importers.torch_checkpoint import parse_policies, schedule_label, what_ifs  # noqa: E402
from backend.trace.intake import load_posted_document  # noqa: E402

EXAMPLES = ["mlp", "residual", "gpt", "transformer_tiny"]
REPEATS = 5
WHAT_IF_EXAMPLES = ["gpt", "transformer_tiny"]
WHAT_IF_POLICIES = "every_k=1,every_k=2,selective"


def timed(build, fn):
    """Median wall time of fn(model, batch, loss_fn, optimizer) over fresh builds (the build is not timed)."""
    times = []
    for _ in range(REPEATS):
        step = unpack_build(build())
        start = time.perf_counter()
        result = fn(*step)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def check_times(text):
    """Median seconds to parse the document's JSON, and to parse it and check it as POST /api/traces does."""
    parse, check = [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        json.loads(text)
        parse.append(time.perf_counter() - start)
        start = time.perf_counter()
        load_posted_document(json.loads(text))
        check.append(time.perf_counter() - start)
    return statistics.median(parse), statistics.median(check)


def what_if_table():
    """Measured (torch) against predicted peaks per schedule, with the difference in percent of the measured."""
    print(f"\n{'example':18} {'schedule':12} {'measured B':>11} {'predicted B':>12} {'diff':>8} "
          f"{'before update: measured':>24} {'predicted':>10} {'diff':>8}  grads")
    for example in WHAT_IF_EXAMPLES:
        found = what_ifs(load_build(ROOT / "examples" / "torch" / f"{example}.py"), parse_policies(WHAT_IF_POLICIES))
        for s in found.document["schedules"]:
            measured, predicted = s["executed_backward_peak_bytes"], s["predicted_backward_peak_bytes"]
            print(f"{example:18} {schedule_label(s):12} {s['executed_peak_bytes']:11,} {s['predicted_peak_bytes']:12,} "
                  f"{s['predicted_error']:+8.3%} {measured:24,} {predicted:10,} {(predicted - measured) / measured:+8.3%}"
                  f"  {'equal' if s['grads_match'] else 'differ'}")
    print("measured = the checkpointed step run by torch.utils.checkpoint(use_reentrant=False) and recorded; "
          "predicted = backend.planner.torch_timeline from the plain step's document alone")


def overhead_table():
    print(f"{'example':18} {'plain ms':>9} {'recorded ms':>12} {'overhead':>9} {'ops':>6} {'doc KiB':>9} "
          f"{'check ms':>9} {'check/parse':>12}")
    for example in EXAMPLES:
        build = load_build(ROOT / "examples" / "torch" / f"{example}.py")
        plain, _ = timed(build, run_step)
        recorded, document = timed(build, record_step)
        text = json.dumps(document, separators=(",", ":"))
        parse, check = check_times(text)
        print(f"{example:18} {plain * 1e3:9.2f} {recorded * 1e3:12.2f} {recorded / plain:8.1f}× "
              f"{document['summary']['entries']:6d} {len(text) / 1024:9.1f} {check * 1e3:9.1f} {check / parse:11.1f}×")
    print("recorded time includes building the document (statistics, live bytes, the peak explanation); "
          "check = parse + schema + consistency, as POST /api/traces")


def main():
    overhead_table()
    what_if_table()


if __name__ == "__main__":
    main()
