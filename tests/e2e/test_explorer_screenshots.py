"""Screenshots of the seed tape at a forward step, at the peak and in backward, saved for a person to look at."""
from pathlib import Path

from tests.e2e.explorer_helpers import ARTIFACTS, go_to_step, live_bytes, open_explorer, trace_for


def test_seed_tape_screenshots(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    summary = trace["summary"]
    backward = next(s["index"] for s in trace["steps"] if s["phase"] == "backward" and s["index"] > summary["forward_end_step"] + 1)
    Path(ARTIFACTS).mkdir(exist_ok=True)
    open_explorer(page, live_server, "seed-tape")
    shots = {"forward": 2, "peak": summary["peak_step"], "backward": backward}
    for label, step in shots.items():
        go_to_step(page, step)
        page.wait_for_timeout(150)  # the adjoint edge animation and the cursor settle
        path = Path(ARTIFACTS) / f"explorer-seed-tape-{label}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
    assert live_bytes(page) == trace["steps"][backward]["live_bytes"]
