"""HTML pages: the explorer at /, and the template helper that lists the modules it preloads."""
from pathlib import Path

from flask import Blueprint, current_app, render_template

from backend.api.module_preloads import module_closure

pages = Blueprint("pages", __name__)


@pages.app_template_global()
def module_preloads(*entries: str) -> list[str]:
    """Paths under static/ of the modules `entries` (files in static/js) import, for <link rel="modulepreload">."""
    folder = Path(current_app.static_folder) / "js"
    return [f"js/{name}" for name in module_closure(folder, entries)]


@pages.get("/")
def explorer():
    return render_template("explorer.html")
