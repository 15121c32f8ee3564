"""One problem collector for every validator: the first 50 listed, all counted, and a short reply for a huge body."""
import json

import pytest

from backend.ledger import LedgerConfigError, parse_config
from backend.models import validate_spec
from backend.models.errors import SpecError
from backend.planner import PolicyError, validate
from backend.problems import MAX_LISTED, Problems


def test_problems_list_the_first_fifty_and_count_them_all():
    problems = Problems()
    for index in range(MAX_LISTED + 25):
        problems.add(f"layers[{index}]", "is wrong")
    assert len(problems) == MAX_LISTED and problems.count == MAX_LISTED + 25
    assert problems[0]["path"] == "layers[0]" and problems[-1]["path"] == f"layers[{MAX_LISTED - 1}]"
    merged = Problems([{"path": "a", "message": "b"}])
    merged.extend(problems)
    assert merged.count == MAX_LISTED + 26 and len(merged) == MAX_LISTED
    assert merged.as_json() == {"problems": list(merged), "problem_count": MAX_LISTED + 26}


def test_models_planner_and_ledger_all_raise_the_same_collector():
    with pytest.raises(SpecError) as spec_error:
        validate_spec({f"k{i}": 0 for i in range(200)})
    with pytest.raises(PolicyError) as policy_error:
        validate({"policy": "teleport", "preserve_rng_state": 3}, 4, set())
    with pytest.raises(LedgerConfigError) as ledger_error:
        parse_config({f"x{i}": "1" for i in range(80)})
    for error, count in [(spec_error, 200), (policy_error, 2), (ledger_error, 80)]:
        assert isinstance(error.value.problems, Problems)
        assert error.value.problems.count >= count and len(error.value.problems) <= MAX_LISTED


def test_a_huge_bad_spec_gets_a_short_reply(client):
    """64,000 unknown keys in a 733 KiB body: the reply was 5.6 MiB; now the first 50 and the count."""
    layer = {"type": "linear", "out": 1, **{f"k{i}": 0 for i in range(4000)}}
    body = json.dumps({"spec": {"input": {"kind": "features", "size": 1}, "layers": [layer] * 16}})
    response = client.post("/api/trace", data=body, content_type="application/json")
    assert response.status_code == 400
    reply = response.get_json()
    assert len(reply["problems"]) == MAX_LISTED and reply["problem_count"] == 64_000
    assert len(response.data) < 16 * 1024


def test_a_huge_bad_ledger_query_gets_a_short_reply(client):
    response = client.get("/api/ledger?" + "&".join(f"x{i}=1" for i in range(20_000)))
    assert response.status_code == 400
    reply = response.get_json()
    assert reply["problem_count"] == 20_000 and len(reply["problems"]) == MAX_LISTED
    assert "(and 19,997 more)" in reply["error"] and len(response.data) < 32 * 1024
