"""The explorer page in a real browser: the graph, the step player, memory and lifetime charts, the sweep panel."""
import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import (at_every_step_there_and_back, current_node_ids, go_to_step, live_bytes, open_explorer,
                                        see_chart, shown_trace, trace_for, unfold_all)


@pytest.mark.parametrize("preset_id", ["seed-tape", "transformer-tiny"])
def test_one_op_node_per_tape_entry_and_one_leaf_per_leaf_tensor(page, live_server, preset_id):
    trace = trace_for(page, live_server, preset_id)
    open_explorer(page, live_server, preset_id)
    unfold_all(page)
    graph = page.locator("[data-testid=graph]")
    assert graph.locator("[data-node-id]").count() == len(trace["tape"])
    assert graph.locator("[data-tensor-id]").count() == len(trace["graph"]["leaves"])
    node_ids = sorted(int(i) for i in graph.locator("[data-node-id]").evaluate_all("ns => ns.map(n => n.dataset.nodeId)"))
    assert node_ids == [entry["index"] for entry in trace["tape"]]


def test_stepping_moves_the_highlight_and_the_memory_cursor_to_the_live_bytes(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    see_chart(page, "memory-chart")
    cursor = page.locator("[data-testid=memory-chart] ~ .chart-cursor, .chart-wrap .chart-cursor").first
    seen_nodes, cursor_x = [], []
    for step in trace["steps"][:7]:
        if step["index"] > 0:
            page.click("[data-testid=step-forward]")
        page.wait_for_function("s => window.tapescope.getStep() === s", arg=step["index"])
        assert current_node_ids(page) == [str(step["entry"])]
        assert live_bytes(page) == step["live_bytes"]
        assert int(cursor.get_attribute("data-bytes")) == step["live_bytes"]
        seen_nodes.append(step["entry"])
        cursor_x.append(cursor.bounding_box()["x"])
    assert len(set(seen_nodes)) > 1
    assert cursor_x == sorted(cursor_x) and cursor_x[-1] > cursor_x[0]
    page.click("[data-testid=step-back]")
    assert page.evaluate("window.tapescope.getStep()") == 5
    assert current_node_ids(page) == [str(trace["steps"][5]["entry"])]


def test_the_peak_step_shows_the_traces_peak_bytes(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    peak, peak_step = trace["summary"]["peak_bytes"], trace["summary"]["peak_step"]
    open_explorer(page, live_server, "seed-tape")
    assert int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == peak
    go_to_step(page, peak_step)
    assert live_bytes(page) == peak
    assert page.inner_text("[data-testid=live-bytes]") == page.inner_text("[data-testid=peak-bytes]")


def test_a_tensor_used_twice_shows_two_contributions_and_their_sum(page, live_server):
    trace = trace_for(page, live_server, "residual-unit")
    names = {t["id"]: t["name"] for t in trace["tensors"]}
    item = next(s for s in trace["sweep"] for a in s["accumulations"] if a["into"] == "buffer" and len(a["parts"]) == 2)
    merge = next(a for a in item["accumulations"] if a["into"] == "buffer")
    open_explorer(page, live_server, "residual-unit")
    go_to_step(page, item["step"])
    panel = page.locator("[data-testid=sweep]")
    assert item["backward"] in panel.inner_text()
    shown = panel.locator("[data-testid=accumulation][data-into=buffer]")
    assert shown.count() >= 1
    text = shown.first.inner_text()
    assert shown.first.get_attribute("data-parts") == "2"
    for part in merge["parts"]:
        assert f"{names[part]}#{part}" in text
    assert f"= {names[merge['total']]}#{merge['total']}" in text
    assert "+=" in text
    to_merged = [c for c in item["contributions"] if c["to"] == merge["tensor"]]
    assert panel.locator(f"[data-testid=contribution][data-to='{merge['tensor']}']").count() == len(to_merged)
    assert page.locator("[data-testid=graph] .node.current.backward").get_attribute("data-node-id") == str(item["entry"])


def test_the_lifetime_chart_has_one_bar_per_saved_tensor(page, live_server):
    trace = trace_for(page, live_server, "residual-unit")
    saved = [t for t in trace["tensors"] if t["saved_by"]]
    open_explorer(page, live_server, "residual-unit")
    bars = see_chart(page, "lifetime-chart").locator(".bars .point")
    # a tooltip at the step cursor is read whole: Plotly's hover layer stacks above the cursor line (it once hid
    # "KiB" and "freed at step 11")
    assert page.evaluate("""() => {
        const chart = document.querySelector('[data-testid=lifetime-chart]');
        const hover = [...chart.querySelectorAll('.svg-container > .main-svg')].find((svg) => svg.querySelector('.hoverlayer'));
        const cursor = chart.parentElement.querySelector('.chart-cursor');
        return Number(getComputedStyle(hover).zIndex) > Number(getComputedStyle(cursor).zIndex);
      }""")
    # Small runs open every scope: one bar per saved activation, a header bar per scope, one resident band.
    keys = page.evaluate("() => document.querySelector('[data-testid=lifetime-chart]').data[0].customdata")
    assert bars.count() == len(keys)
    assert sorted(k for k in keys if k.startswith("t")) == sorted(f"t{t['id']}" for t in saved if t["kind"] != "param")
    assert keys.count("resident") == 1


def test_keyboard_steps_plays_and_jumps(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    page.locator("body").click(position={"x": 5, "y": 790})
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("window.tapescope.getStep()") == 2
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("window.tapescope.getStep()") == 1
    expect(page.get_by_test_id("step-number")).to_have_text(f"1 / {len(trace['steps']) - 1}")
    page.keyboard.press("End")
    assert page.evaluate("window.tapescope.getStep()") == len(trace["steps"]) - 1
    expect(page.get_by_test_id("step-number")).to_have_text(f"{len(trace['steps']) - 1} / {len(trace['steps']) - 1}")
    page.keyboard.press("Home")
    assert page.evaluate("window.tapescope.getStep()") == 0
    page.keyboard.press(" ")
    page.wait_for_function("() => window.tapescope.getStep() >= 2")
    page.keyboard.press(" ")
    paused_at = page.evaluate("window.tapescope.getStep()")
    page.wait_for_timeout(600)
    assert page.evaluate("window.tapescope.getStep()") == paused_at
    assert "forward" in page.inner_text("[data-testid=step-label]") or "backward" in page.inner_text("[data-testid=step-label]")


@pytest.mark.parametrize("dropdown", ["preset", "checkpoint-policy"])
def test_right_after_a_pick_the_arrow_keys_step_and_leave_the_dropdown_as_picked(page, live_server, dropdown):
    """"Pick a model, then step with ← →": the dropdown keeps the focus after a pick, and ← → step from there
    instead of picking the next option; ↓ still chooses in it."""
    open_explorer(page, live_server, "deep-mlp")
    control = page.get_by_test_id(dropdown)
    picked = control.input_value()
    control.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("window.tapescope.getStep()") == 1
    assert control.input_value() == picked
    expect(control).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(control).not_to_have_value(picked)


def test_the_step_label_writes_the_entry_out_in_words(page, live_server):
    open_explorer(page, live_server, "seed-tape")
    go_to_step(page, 3)
    label = page.inner_text("[data-testid=step-label]")
    assert label.startswith("forward · entry 3 · matmul ")
    assert " @ " in label and "→" in label and "saves" in label
    go_to_step(page, 6)
    assert page.inner_text("[data-testid=step-label]").startswith("backward · entry 3 · MatmulBackward reads")


def test_after_backward_the_graph_shows_as_freed(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    last_backward = max(s["index"] for s in trace["steps"] if s["phase"] == "backward")
    open_explorer(page, live_server, "seed-tape")
    go_to_step(page, 0)
    assert page.locator("[data-testid=graph] .node.held").count() >= 1
    go_to_step(page, last_backward)
    assert page.locator("[data-testid=graph] .op.freed").count() == len(trace["tape"])
    assert page.locator("[data-testid=graph] .node.held").count() == 0
    assert "second time" in page.inner_text("[data-testid=sweep]")


def test_clicking_a_node_inspects_it_with_values(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    x = next(t for t in trace["tensors"] if t["name"] == "x")
    open_explorer(page, live_server, "seed-tape")
    page.click(f"[data-testid=graph] [data-tensor-id='{x['id']}']")
    inspector = page.locator("#inspector")
    text = inspector.inner_text()
    assert x["address"] in text and "[64,1]" in text and "float32" in text
    assert inspected_fact(page, "bytes") == "256 B"           # under a KiB, said once
    # the values' heatmap: the first Plotly on a page whose charts are all below the screen, so it may load Plotly first
    expect(page.locator("#inspector .inspector-heatmap .main-svg").first).to_be_attached()
    assert page.locator(f"[data-testid=graph] [data-tensor-id='{x['id']}'].selected").count() == 1
    largest = max(trace["tensors"], key=lambda t: t["nbytes"])           # t2 [64,64] float32: 16 KiB
    page.evaluate("id => window.tapescope.select(id)", f"t{largest['id']}")
    page.wait_for_function(f"name => ({INSPECTED_FACT})('tensor')?.startsWith(name + ' ')", arg=largest["name"])
    assert largest["nbytes"] == 16_384 and inspected_fact(page, "bytes") == "16.0 KiB (16,384 B)"


INSPECTED_FACT = """term => [...document.querySelectorAll("#inspector dl.facts > dt")]
  .find((dt) => dt.textContent === term)?.nextElementSibling.textContent"""


def inspected_fact(page, term):
    """What the inspector's facts say beside `term`."""
    return page.evaluate(INSPECTED_FACT, term)


def test_the_inspectors_state_row_follows_the_cursor_through_every_step(page, live_server):
    """A step with a selection refreshes only the inspector's "at step" row: at every step, forward then back, it names
    that step and says what the tensor is then (not yet allocated, alive, freed), and the rest of the facts stay."""
    open_explorer(page, live_server, "deep-mlp")
    trace = shown_trace(page)
    saved = next(t for t in trace["tensors"] if t["saved_by"] and t["kind"] == "activation" and t["freed"] is not None)
    page.evaluate("id => window.tapescope.select(id)", f"t{saved['id']}")
    rows = at_every_step_there_and_back(page, """() => {
        const at = [...document.querySelectorAll("#inspector .inspector-body dl.facts > dt")].find((dt) => dt.textContent.startsWith("at step"));
        return { term: at?.textContent, state: at?.nextElementSibling.textContent,
                 facts: document.querySelectorAll("#inspector .inspector-body dl.facts > dt").length };
      }""")
    assert len(rows) == 2 * len(trace["steps"])
    assert len({row["facts"] for row in rows}) == 1
    for row in rows:
        step = row["step"]
        assert row["term"] == f"at step {step}"
        if step < saved["born"]:
            assert row["state"] == "not yet allocated", row
        elif step > saved["freed"]:
            assert row["state"] == f"freed at step {saved['freed']}", row
        else:
            assert row["state"].startswith("alive"), row


@pytest.mark.parametrize("preset_id", ["seed-tape", "transformer-tiny"])
def test_a_tensor_two_nodes_saved_is_held_until_the_later_has_run(page, live_server, preset_id):
    """Each node that saved a tensor lets go of its own reference once it has run (sweep[].freed): between the first
    and the last of those releases the tape still holds it, and the inspector says so; after the last, released."""
    open_explorer(page, live_server, preset_id)
    trace = shown_trace(page)
    releases = {}
    for item in trace["sweep"]:
        for tensor_id in item["freed"]:
            releases.setdefault(tensor_id, []).append(item["step"])
    tensors = {t["id"]: t for t in trace["tensors"]}
    first, last, tensor = next((min(steps), max(steps), tensors[i]) for i, steps in releases.items()
                               if min(steps) < max(steps) and (tensors[i]["freed"] is None or tensors[i]["freed"] >= max(steps)))
    page.evaluate("id => window.tapescope.select(id)", f"t{tensor['id']}")
    states = at_every_step_there_and_back(page, """() => {
        const at = [...document.querySelectorAll("#inspector .inspector-body dl.facts > dt")].find((dt) => dt.textContent.startsWith("at step"));
        return { state: at?.nextElementSibling.textContent };
      }""")
    said = {row["step"]: row["state"] for row in states}
    assert said[first] == said[last - 1] == "alive, held by the tape for backward"
    assert said[last] == f"alive, released by backward at step {last}"


@pytest.mark.parametrize("preset_id", ["seed-tape", "transformer-tiny"])
def test_the_sweep_strikes_out_only_the_released_tensors_whose_memory_goes(page, live_server, preset_id):
    """A node lets go of what it saved once it has run; the sweep panel lists those as released and strikes out only
    the ones whose memory is freed at that step (not a parameter, an input, or a tensor another node still holds),
    and says beside each other one why it stays (a newcomer read "released" as memory given back)."""
    open_explorer(page, live_server, preset_id)
    trace = shown_trace(page)
    tensors = {t["id"]: t for t in trace["tensors"]}
    shown = page.evaluate("""(items) => items.map((step) => {
        window.tapescope.setStep(step);
        const term = [...document.querySelectorAll("[data-testid=sweep] dl.facts > dt")].find((dt) => dt.textContent === "released");
        const chips = term ? [...term.nextElementSibling.querySelectorAll(".chip")] : [];
        return { step, released: chips.map((c) => Number(c.dataset.select.slice(1))),
                 struck: chips.filter((c) => c.classList.contains("freed-chip")).map((c) => Number(c.dataset.select.slice(1))),
                 notes: chips.map((c) => c.nextElementSibling?.classList.contains("chip-note") ? c.nextElementSibling.textContent : null) };
      })""", [item["step"] for item in trace["sweep"]])
    kept_somewhere = 0
    for item, row in zip(trace["sweep"], shown):
        assert row["released"] == item["freed"], item["step"]
        assert row["struck"] == [i for i in item["freed"] if tensors[i]["freed"] == item["step"]], item["step"]
        kept_somewhere += len(row["released"]) - len(row["struck"])
        for uid, note in zip(row["released"], row["notes"]):        # released is not freed: the page says why it stays
            if uid in row["struck"]:
                assert note is None
            elif tensors[uid]["kind"] == "param":
                assert note == "stays: a parameter", (item["step"], uid, note)
            else:
                assert note and note.startswith("stays: "), (item["step"], uid, note)
    assert kept_somewhere, "some released tensor stays in memory (a parameter, an input, or saved twice)"


def test_an_edit_replaces_the_graph_keeps_the_step_and_ghosts_the_previous_run(page, live_server):
    before = trace_for(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    go_to_step(page, 3)
    shown = page.evaluate("window.tapescope.traceCount()")
    page.locator('#editor-panel .editor-form [data-field="batch"] > [data-path="batch"]').fill("128")
    page.wait_for_function("n => window.tapescope.traceCount() > n && document.querySelector('.explorer').dataset.ready === 'true'",
                           arg=shown)
    after = shown_trace(page)
    assert after["spec"]["batch"] == 128
    assert page.evaluate("window.tapescope.getStep()") == 3
    delta = page.inner_text("[data-testid=peak-delta]")
    assert delta.startswith("peak ") and "→" in delta
    assert before["summary"]["peak_bytes"] != after["summary"]["peak_bytes"]
    see_chart(page, "memory-chart")
    names = page.evaluate("Array.from(document.querySelector('[data-testid=memory-chart]').data, d => d.name)")
    assert "previous run" in names


@pytest.mark.parametrize("preset_id", ["deep-mlp", "transformer-tiny"])
def test_the_memory_legend_names_only_the_kinds_the_run_holds(page, live_server, preset_id):
    """Every kind stays in the stack, but the legend names only those with bytes at some step: ten names, five of
    them always zero, pushed the biggest band's name out of the legend's view at 1280×800."""
    open_explorer(page, live_server, preset_id)
    trace = shown_trace(page)
    held = {kind for step in trace["steps"] for kind, nbytes in step["by_kind"].items() if nbytes}
    see_chart(page, "memory-chart")
    legend = page.eval_on_selector_all("[data-testid=memory-chart] .legendtext", "ts => ts.map(t => t.textContent)")
    assert set(legend) == held and len(legend) == len(held), (legend, held)
    for name in legend:
        expect(page.locator("[data-testid=memory-chart] .legendtext", has_text=name).first).to_be_visible()


def test_the_page_runs_under_the_csp_without_errors(page, live_server):
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" and "favicon" not in message.text else None)
    response = page.goto(f"{live_server}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".explorer[data-ready=true]")
    page.click("[data-testid=step-forward]")
    assert [e for e in errors if "404" not in e] == []


def test_an_address_naming_no_preset_says_so_and_opens_the_workspace(page, live_server):
    """/?preset=nonexistent once opened the workspace's model without a word: a misspelt link looked like a wrong one."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/?preset=nonexistent")
    page.wait_for_selector(".explorer[data-ready=true]")
    expect(page.locator("#status")).to_contain_text('this address names a model "nonexistent" that is not one of the presets')
    expect(page.locator("#status")).to_contain_text("seed-tape")                    # the names it could have been
    assert page.evaluate("window.tapescope.getTrace().spec.name") == "seed-tape"      # a fresh visitor's workspace
