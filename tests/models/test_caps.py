"""Every cap lives once, in backend/models/caps.py: where the page must keep a copy of one (the undo history's
length, used before GET /api/schema answers), the copy is checked against it here."""
import re
from pathlib import Path

from backend.models.caps import CAPS, cap

WORKSPACE_JS = Path(__file__).resolve().parents[2] / "static" / "js" / "state" / "workspace.js"


def test_the_pages_undo_history_keeps_as_many_entries_as_the_server():
    (literal,) = re.findall(r"export const HISTORY_LIMIT = (\d+);", WORKSPACE_JS.read_text())
    assert int(literal) == cap("history_entries")


def test_the_caps_are_positive_numbers():
    assert all(isinstance(value, (int, float)) and value > 0 for value in CAPS.values())
