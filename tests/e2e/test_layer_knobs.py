"""The editor driven by GET /api/schema, and the layer knobs in a real browser: a cap changed in Python moves the
slider's max; freezing lowers the peak to the trace's figure; the version-error preset stops at its step."""
from playwright.sync_api import expect

from backend.models.caps import CAPS
from tests.e2e.explorer_helpers import open_explorer


def editor_input(page, path, kind="number"):
    return page.locator(f'#editor-panel input[type={kind}][data-path="{path}"]')


def test_the_sliders_and_boxes_span_the_caps_set_in_python(page, live_server, monkeypatch):
    monkeypatch.setitem(CAPS, "batch", 777)
    monkeypatch.setitem(CAPS, "width", 333)
    open_explorer(page, live_server, "deep-mlp")
    expect(editor_input(page, "batch", "range")).to_have_attribute("max", "777")
    expect(editor_input(page, "batch")).to_have_attribute("max", "777")
    expect(editor_input(page, "layers[0].layers[0].out", "range")).to_have_attribute("max", "333")
    monkeypatch.setitem(CAPS, "batch", 2048)
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]")
    expect(editor_input(page, "batch", "range")).to_have_attribute("max", "2048")
