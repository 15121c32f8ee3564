"""POST /api/traces of a run of many ranks ({"world_size": N, "ranks": [...]}, what --nproc writes): a real 2-rank
FSDP2 run is checked rank by rank, stored as it came and read back from its link; a malformed one is a 400 whose
problems name the path (ranks missing, a rank's document failing the single document's check, a rank out of place)."""
import copy

import pytest

from tests.many_ranks import FSDP_RANKS_GROUP

pytestmark = pytest.mark.xdist_group(FSDP_RANKS_GROUP)


@pytest.fixture(scope="module")
def run(fsdp_ranks_run):
    return fsdp_ranks_run[1]


def _post(client, body):
    return client.post("/api/traces", json=body)


def _paths(response):
    return {problem["path"] for problem in response.get_json()["problems"]}


def test_a_run_of_two_ranks_round_trips(client, run):
    response = _post(client, run)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert client.get(body["url"]).status_code == 200
    stored = client.get(f"/api/snapshots/{body['id']}").get_json()
    assert stored["trace"] == run                     # every rank's document, as it came
    assert [rank["rank"] for rank in stored["trace"]["ranks"]] == [0, 1]
    assert stored["title"] == f"{run['ranks'][0]['source']['model']} (torch {run['ranks'][0]['source']['torch_version']})"


def test_a_run_without_its_ranks_is_a_400_naming_ranks(client, run):
    response = _post(client, {"world_size": 2, "ranks": []})
    assert response.status_code == 400 and "ranks" in _paths(response)
    response = _post(client, {"world_size": 2, "ranks": run["ranks"][:1]})
    assert response.status_code == 400 and "ranks" in _paths(response)
    response = _post(client, {"world_size": "two", "ranks": run["ranks"]})
    assert response.status_code == 400 and "world_size" in _paths(response)


def test_a_rank_failing_the_single_document_check_is_a_400_naming_its_path(client, run):
    broken = copy.deepcopy(run)
    broken["ranks"][1]["summary"]["peak_bytes"] += 1
    response = _post(client, broken)
    assert response.status_code == 400
    assert "ranks[1].summary.peak_bytes" in _paths(response)
    assert "Rank 1" in response.get_json()["error"]


def test_a_rank_in_the_wrong_place_is_a_400(client, run):
    swapped = {"world_size": 2, "ranks": [run["ranks"][1], run["ranks"][0]]}
    response = _post(client, swapped)
    assert response.status_code == 400
    assert {"ranks[0].rank", "ranks[1].rank"} <= _paths(response)


def test_more_ranks_than_the_importer_records_is_a_413_before_any_is_checked(client):
    response = _post(client, {"world_size": 17, "ranks": [{}] * 17})
    assert response.status_code == 413
    assert response.get_json()["cap"] == "ranks"


def test_the_declared_rank_cap_is_the_ranks_cap():
    from backend.models.caps import cap
    from backend.trace.declaration import RUN
    (ranks,) = [field for field in RUN.fields if field.name == "ranks"]
    assert ranks.type["maxItems"] == cap("ranks")
