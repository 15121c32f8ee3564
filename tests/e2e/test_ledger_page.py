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

    page.goto(f"{live_server}/ledger?layers=12&hidden=2048")
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

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ledger.png"), full_page=True)

    # Changing a field recomputes and keeps the link shareable; flash attention drops the seq×seq rows.
    page.select_option("#f-attention", "flash")
    expect(rows.filter(has_text="attn.logsumexp")).to_have_count(1)
    expect(rows.filter(has_text="attn.probs")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"/ledger\?attention=flash$"))

    # A bad value is reported next to the form, not as a broken page.
    page.fill("#f-heads", "3")
    page.click("#ledger-form button[type=submit]")
    expect(page.locator("#ledger-problems")).to_contain_text("heads must divide hidden")
    expect(page.locator("#f-heads")).to_have_attribute("aria-invalid", "true")
    assert errors == []
