"""HTML pages: the explorer at /, and the template helper that lists the modules it preloads."""
from functools import lru_cache
from pathlib import Path

from flask import Blueprint, current_app, render_template

from backend.api.assets import static_version
from backend.api.module_preloads import module_closure

pages = Blueprint("pages", __name__)


@pages.app_template_global()
def module_preloads(*entries: str) -> list[str]:
    """Paths under static/ of the modules `entries` (files in static/js) import, for <link rel="modulepreload">:
    read once per version of the static files (parsing every module took 90 ms of each page's answer)."""
    return _preloads(current_app.static_folder, entries, static_version())


@lru_cache(maxsize=16)
def _preloads(static_folder: str, entries: tuple[str, ...], version: str) -> list[str]:
    return [f"js/{name}" for name in module_closure(Path(static_folder) / "js", entries)]


@pages.get("/")
def explorer():
    return render_template("explorer.html")
