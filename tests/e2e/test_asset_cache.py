"""A returning visitor's browser loads the page's files from its cache: a second visit asks the server for none of
the ~70 scripts and styles (backend/api/assets.py), only the page and its data."""
from flask import request

from app import create_app
from tests.live import serving
from tests.settings import app_config


def test_a_second_visit_asks_the_server_for_no_script_or_style(browser, tmp_path):
    app = create_app(app_config(f"sqlite:///{tmp_path / 'assets.sqlite'}"))
    asked = []
    app.before_request(lambda: asked.append(request.path))
    with serving(app) as url:
        context = browser.new_context()
        try:
            tab = context.new_page()
            tab.goto(f"{url}/")
            tab.wait_for_selector(".explorer[data-ready=true]")
            first = [path for path in asked if path.startswith("/assets/")]
            assert len(first) >= 60, first
            asked.clear()
            tab.goto(f"{url}/")
            tab.wait_for_selector(".explorer[data-ready=true]")
            tab.wait_for_load_state("networkidle")
            assert "/" in asked and any(path.startswith("/api/") for path in asked)
            assert [path for path in asked if path.startswith(("/assets/", "/static/"))] == []
        finally:
            context.close()
