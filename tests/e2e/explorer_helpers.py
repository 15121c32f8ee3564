"""Helpers for the explorer's browser tests: open a preset, read a trace the way the page got it, step, drop a
run file on the page."""
import json
from pathlib import Path

from playwright.sync_api import expect

from backend.trace.document_versions import unpack

ARTIFACTS = "test-artifacts"


def shown_trace(page):
    """The trace the explorer shows, as the page holds it. Sent as one JSON string: Playwright's own serializer walks
    a 2-3 MB trace object by object (~0.9 s a call on grad-accumulation, against ~0.2 s for JSON.stringify)."""
    return json.loads(page.evaluate("JSON.stringify(window.tapescope.getTrace() ?? null)"))


def presets(page, base_url):
    return {preset["id"]: preset for preset in page.request.get(f"{base_url}/api/presets").json()}


def trace_for(page, base_url, preset_id):
    spec = presets(page, base_url)[preset_id]["spec"]
    response = page.request.post(f"{base_url}/api/trace", data={"spec": spec})
    assert response.ok, response.text()
    return unpack(response.json())       # the records the page decodes it into


def open_explorer(page, base_url, preset_id="seed-tape", size=(1280, 800)):
    """The explorer at `size` (1280x800 unless told), showing `preset_id`, drawn and interactive."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{base_url}/?preset={preset_id}")         # the address names the model: it opens first, alone
    page.wait_for_selector(".explorer[data-ready=true]")
    if page.evaluate("window.tapescope.getTrace().spec.name") != preset_id:
        page.select_option("[data-testid=preset]", preset_id)
        page.wait_for_function(
            "id => window.tapescope.getTrace().spec.name === id"
            " && document.querySelector('.explorer').dataset.ready === 'true'", arg=preset_id)


def unfold_all(page):
    """Draw every node: big graphs open with their modules folded; "Unfold all" opens them (and the traces after)."""
    button = page.get_by_test_id("graph-unfold-all")
    if button.is_visible() and button.text_content() == "Unfold all":
        button.click()
    page.wait_for_function("() => !document.querySelector('[data-testid=graph] .group-node')")


def see_chart(page, test_id, timeout=None):
    """The chart `test_id` as a reader sees it: scrolled to, and plotted with the run shown now (a chart is plotted once
    it is on screen, static/js/views/charts/on-screen.js). Its locator."""
    chart = page.get_by_test_id(test_id)
    chart.scroll_into_view_if_needed(timeout=timeout)
    expect(chart).to_have_attribute("data-drawn", "true", timeout=timeout)
    return chart


def see_charts(page):
    """Every chart of the explorer plotted, scrolled to one by one: before a full-page screenshot, which does not
    scroll. The Pareto chart only when it has schedules to show."""
    for test_id in ("memory-chart", "lifetime-chart"):
        see_chart(page, test_id)
    if page.get_by_test_id("pareto-chart").is_visible():
        see_chart(page, "pareto-chart")
    page.evaluate("window.scrollTo(0, 0)")


def go_to_step(page, step):
    """Step with the slider, as a person dragging it would."""
    page.locator("[data-testid=scrub]").fill(str(step))
    page.wait_for_function("s => window.tapescope.getStep() === s", arg=step)


def live_bytes(page):
    return int(page.get_attribute("[data-testid=live-bytes]", "data-bytes"))


def current_node_ids(page):
    return page.eval_on_selector_all("[data-testid=graph] .node.current", "nodes => nodes.map(n => n.dataset.nodeId)")


def drop(page, path, target="[data-testid=drop-zone]"):
    """A file dropped from the desktop: a synthetic drop event carrying it, as the browser would fire one."""
    page.evaluate("""([text, name, target]) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([text], name, { type: "application/json" }));
        const zone = document.querySelector(target);
        zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }""", [Path(path).read_text(), Path(path).name, target])


WHOLE = "(trace) => trace"


def wait_schedule(page, policy, read=WHOLE, **params):
    """Wait until the explorer shows a trace whose schedule is `policy` (with `params`) and is interactive; that trace,
    read in the same evaluation that saw it (read after, it could be the next one: a re-trace of the same request,
    whose schedules follow it by half a second). `read`, a JavaScript function of the trace, picks what comes back:
    the whole trace unless told (a 3.8 MB one, grad-accumulation's unfolded under every_k=1, costs ~0.25 CPU-s in the
    browser, the driver and here to carry over)."""
    found = page.wait_for_function(
        """([policy, params]) => {
             const trace = window.tapescope.getTrace();
             const s = trace?.schedule;
             return s && s.policy === policy && Object.entries(params).every(([k, v]) => s.params[k] === v)
               && document.querySelector('.explorer').dataset.ready === 'true' && JSON.stringify((READ)(trace));
           }""".replace("READ", read), arg=[policy, params], timeout=30000)
    return json.loads(found.json_value())


def choose(page, policy, k=None, preserve=None, read=WHOLE):
    """Pick a checkpoint policy (and k, and whether RNG state is kept) as a person would; the trace it shows (or what
    `read` picks from it, as wait_schedule)."""
    page.get_by_test_id("checkpoint-policy").select_option(policy)
    params = {}
    if k is not None:
        shown_k = wait_schedule(page, policy, read="(trace) => trace.schedule.params.k")
        if shown_k != k:                                                 # a person leaves k alone when it is right
            page.get_by_test_id("checkpoint-k").fill(str(k))
        params["k"] = k
    if preserve is not None:
        wait_schedule(page, policy, read="(trace) => null", **params)
        page.get_by_test_id("checkpoint-rng").set_checked(preserve)
        page.wait_for_function("p => window.tapescope.getTrace()?.schedule?.preserve_rng_state === p"
                               " && document.querySelector('.explorer').dataset.ready === 'true'", arg=preserve, timeout=30000)
    return wait_schedule(page, policy, read=read, **params)


def at_every_step_there_and_back(page, read):
    """Step through every step of the shown trace, forward then back, in one script, as a held arrow key would;
    `read` is JavaScript, a function of the step run right after the page moved there; [{step, ...what it read}]."""
    return page.evaluate(f"""() => {{
        const read = {read};
        const order = [...Array(window.tapescope.getTrace().steps.length).keys()];
        return [...order, ...order.reverse()].map((step) => {{ window.tapescope.setStep(step); return {{ step, ...read(step) }}; }});
      }}""")
