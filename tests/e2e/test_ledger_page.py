"""The ledger page in a real browser: the form prefilled from the link, the rows, three charts, the reconciliation."""
import re
from pathlib import Path

from playwright.sync_api import expect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_ledger_page_shows_rows_charts_and_reconciliation(page, live_server):
    errors = []    # script errors; failed loads (the favicon, the deliberate 400 below) are not script errors
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.goto(f"{live_server}/ledger?layers=12&hidden=2048&heads=16&position_embeddings=false")
    expect(page.locator("body")).to_have_attribute("data-ledger-ready", "true", timeout=15000)

    expect(page.locator("#f-layers")).to_have_value("12")
    rows = page.locator("#ledger-rows tbody tr:not(.section)")
    expect(rows.filter(has_text="attn.probs")).to_have_count(1)
    expect(rows.filter(has_text="attn.dropout_mask")).to_contain_text("128 MiB")
    expect(rows.filter(has_text="mlp.fc1_output")).to_contain_text("256 MiB")
    # 20 layer rows, 7 once-per-network rows, 2 head rows
    expect(rows).to_have_count(29)

    for chart in ("#chart-rows", "#chart-checkpoint", "#chart-batch"):
        expect(page.locator(f"{chart} .main-svg").first).to_be_visible()
    expect(page.locator("#chart-rows .bars .point")).not_to_have_count(0)
    expect(page.locator("#ledger-summary")).to_contain_text("707.2 M")
    expect(page.locator("#ledger-summary")).to_contain_text("3.07 GiB")
    expect(page.locator("#ledger-figures")).to_contain_text("1,184 MiB")
    expect(page.locator("#ledger-figures")).to_contain_text("2,208 MiB")
    expect(page.locator("#ledger-figures")).to_contain_text("2,464 MiB")
    expect(page.locator("#ledger-reconciliation")).to_contain_text("fc1's product")
    # The published figure is named by the model it is for, and k* is defined where it is read.
    expect(page.locator("#ledger-figures")).to_contain_text("The reference GPT's stated layer (12 × 2048, 16 heads")
    kstar = page.locator("#ledger-kstar")
    expect(kstar).to_contain_text("with L = 12 layers, a = ")
    expect(kstar).to_contain_text("(what one layer saves for backward) and b = 64 MiB (one kept layer input")
    expect(kstar).to_contain_text("k* = √(L·b/a) minimizes it")
    assert "000_" not in page.locator("body").inner_text()

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ledger.png"), full_page=True)

    # Changing a field recomputes and keeps the link shareable; flash attention drops the seq×seq rows.
    page.select_option("#f-attention", "flash")
    expect(rows.filter(has_text="attn.logsumexp")).to_have_count(1)
    expect(rows.filter(has_text="attn.probs")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"/ledger\?hidden=2048&heads=16&position_embeddings=false&attention=flash$"))

    # A bad value is reported next to the form, not as a broken page.
    page.fill("#f-heads", "3")                       # numbers apply as typed, like every other field

    expect(page.locator("#ledger-problems")).to_contain_text("heads must divide hidden")
    expect(page.locator("#f-heads")).to_have_attribute("aria-invalid", "true")
    assert errors == []


def test_named_presets_fill_the_shape_and_numbers_apply_like_choices(page, live_server):
    page.goto(f"{live_server}/ledger")
    expect(page.locator("body")).to_have_attribute("data-ledger-ready", "true", timeout=15000)
    expect(page.get_by_test_id("ledger-preset")).to_have_value("gpt2-small")    # the default is GPT-2 small
    expect(page.locator("#f-hidden")).to_have_value("768")
    expect(page.locator("#ledger-summary")).to_contain_text("124.4 M")          # GPT-2 small's published size
    expect(page.locator("#ledger-form button", has_text="Compute")).to_have_count(0)     # no button some fields need
    page.get_by_test_id("ledger-preset").select_option("reference")
    expect(page.locator("#f-hidden")).to_have_value("2048")
    expect(page.locator("#ledger-summary")).to_contain_text("707.2 M")          # the reference GPT's stated size
    page.get_by_test_id("ledger-preset").select_option("gpt2-small")
    page.fill("#f-layers", "24")
    expect(page).to_have_url(re.compile(r"layers=24"), timeout=5000)
    expect(page.get_by_test_id("ledger-preset")).to_have_value("")             # a hand edit makes it custom
    page.fill("#f-hidden", "1024")
    page.fill("#f-heads", "16")
    expect(page.get_by_test_id("ledger-preset")).to_have_value("gpt2-medium", timeout=5000)
    expect(page.locator("h2", has_text="Reconciliation")).to_have_count(0)


def test_a_small_model_shows_its_real_size_and_a_batch_the_field_takes(page, live_server):
    page.goto(f"{live_server}/ledger?layers=2&hidden=32&heads=4&vocab=50&batch=2&seq=16&tied_embeddings=false"
              "&position_embeddings=false")
    expect(page.locator("body")).to_have_attribute("data-ledger-ready", "true", timeout=15000)
    summary = page.locator("#ledger-summary")
    expect(summary).to_contain_text("28.7 K")
    expect(summary).not_to_contain_text("0 M")
    expect(summary).to_contain_text("65,536 (the batch field's limit: more would fit)")


def test_the_seed_s_question_seven_billion_on_eight_80_gb_cards_is_answered_per_gpu(page, live_server):
    """Llama 2 7B from the preset menu, bf16 with fp32 master weights, micro-batch 1, 8 × 80 GiB: one GPU's rows
    and peak as /api/ledger computes them, Megatron's figure beside, and the fits table: plain data parallel does
    not fit, ZeRO-3 over 8 does."""
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/ledger?batch=1&dtype=bf16&mixed_precision=true&attention=flash&device_gib=80&dp=8&zero=3")
    expect(page.locator("body")).to_have_attribute("data-ledger-ready", "true", timeout=15000)
    page.select_option("#f-preset", "llama2-7b")
    expect(page.locator("#f-layers")).to_have_value("32")
    expect(page.locator("#ledger-summary")).to_contain_text("6.74 B")
    query = page.url.split("?", 1)[1]
    api = page.request.get(f"{live_server}/api/ledger?{query}").json()
    gpu = api["per_gpu"]
    lede = page.locator("#ledger-per-gpu-lede")
    expect(lede).to_contain_text("dp 8 · ZeRO 3 · tp 1 · pp 1 on 8 GPUs")
    expect(lede).to_contain_text(f"peaks at {gpu['peak_bytes'] / 2**30:.2f} GiB, which fits in 80 GiB")
    table = page.locator("#ledger-per-gpu tbody tr")
    expect(table).to_have_count(5)
    expect(table.filter(has_text="Optimizer state")).to_contain_text("a 1/dp shard")
    expect(page.locator("#ledger-megatron")).to_contain_text("flat 5% for temporaries")
    expect(page.locator("#ledger-record-command")).to_have_text(gpu["record"]["command"])
    expect(page.locator("#ledger-record-command")).to_contain_text("examples/torch/llama7b_fsdp.py --fake --world-size 8")
    fits = page.locator("#ledger-fits tbody tr")
    expect(fits).to_have_count(len(api["fits"]["rows"]))
    expect(page.locator("#ledger-fits-title")).to_have_text("What fits on 8 × 80 GiB")
    simplest = api["fits"]["rows"][0]
    expect(page.locator("#ledger-fits-lede")).to_contain_text(
        f"The simplest that fits: dp {simplest['dp']} · ZeRO {simplest['zero']} · tp 1 · pp 1, "
        f"{simplest['peak_bytes'] / 2**30:.2f} GiB per GPU")
    plain = fits.filter(has=page.locator("td:nth-child(1)", has_text="8")).filter(
        has=page.locator("td:nth-child(2)", has_text="0"))
    expect(plain.first).to_contain_text("does not fit")
    assert not api["fits"]["rows"][-1]["fits"] and api["fits"]["rows"][0]["fits"]
    assert errors == []
