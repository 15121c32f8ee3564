"""HTML pages: the explorer at /."""
from flask import Blueprint, render_template

pages = Blueprint("pages", __name__)


@pages.get("/")
def explorer():
    return render_template("explorer.html")
