"""The memory kinds are declared once (backend/trace/memory_kinds.py): the schemas, the page's list and colours and
the words of the peak's sentence follow that declaration, and a document counts every kind at every step."""
import json
import re
from pathlib import Path

import pytest

from backend.models import presets, validate_spec
from backend.trace.memory_kinds import MEMORY_KIND_NAMES, MEMORY_KIND_WORDS
from backend.trace.run import record

ROOT = Path(__file__).resolve().parents[2]


def js_list(source, name):
    listed = re.search(rf"export const {name} = \[([^\]]*)\]", source)
    assert listed, f"{name} is not declared as a literal list"
    return re.findall(r'"([a-z_]+)"', listed.group(1))


def test_the_page_lists_the_declared_kinds_in_order_with_a_colour_each():
    palette = (ROOT / "static" / "js" / "lib" / "palette.js").read_text()
    assert js_list(palette, "MEMORY_KINDS") == list(MEMORY_KIND_NAMES)
    colours = re.search(r"export const KIND_COLORS = \{([^}]*)\}", palette).group(1)
    assert sorted(re.findall(r"([a-z_]+):", colours)) == sorted(MEMORY_KIND_NAMES)


@pytest.mark.parametrize("schema", ["trace.schema.json", "trace.v1.schema.json"])
def test_each_schema_enumerates_the_declared_kinds(schema):
    declared = json.loads((ROOT / "docs" / schema).read_text())["$defs"]["kind"]["enum"]
    assert declared == list(MEMORY_KIND_NAMES)


def test_a_document_counts_every_kind_at_every_step_in_words_of_its_own():
    document, _ = record(validate_spec(presets.get("mixed-precision")), values=False)
    assert all(set(step["by_kind"]) == set(MEMORY_KIND_NAMES) for step in document["steps"])
    assert set(document["summary"]["peak"]["by_kind"]) <= set(MEMORY_KIND_NAMES)
    assert all(MEMORY_KIND_WORDS[kind] for kind in MEMORY_KIND_NAMES)


def test_the_sharding_kinds_are_roles_a_ranks_storages_take():
    from backend.trace.memory_kinds import SHARDING_KINDS
    collectives = pytest.importorskip("backend.importers.torch_collectives", reason="torch is an optional extra")
    assert SHARDING_KINDS == ("unsharded_param", "unsharded_grad", "comm_buffer")
    assert set(SHARDING_KINDS) <= set(collectives.ROLES)
