"""A key nothing declares gets one sentence wherever it is sent: in a spec (/api/trace), in a snapshot body
(/api/snapshots), in a ledger query (/api/ledger); it names the key's path and the fields that are declared there."""
from backend.models import presets

SENTENCE = "is not a field here; the fields here are "


def problem_at(reply, path):
    assert reply.status_code == 400, reply.get_data(as_text=True)[:300]
    return next(p["message"] for p in reply.get_json()["problems"] if p["path"] == path)


def fields_listed(message):
    assert message.startswith(SENTENCE), message
    return message[len(SENTENCE):].split(", ")


def test_a_spec_a_snapshot_and_a_ledger_query_say_the_same_sentence(client):
    spec = {**presets.get("seed-tape"), "colour": "blue"}
    in_spec = problem_at(client.post("/api/trace", json={"spec": spec}), "colour")
    in_snapshot = problem_at(client.post("/api/snapshots", json={"spec": presets.get("seed-tape"), "colour": 1}), "colour")
    in_ledger = problem_at(client.get("/api/ledger?colour=blue"), "colour")
    assert "batch" in fields_listed(in_spec) and "layers" in fields_listed(in_spec)
    assert fields_listed(in_snapshot) == ["checkpoint", "spec", "title", "view"]
    assert "layers" in fields_listed(in_ledger) and "heads" in fields_listed(in_ledger)
    assert len({message.split("; ")[0] for message in (in_spec, in_snapshot, in_ledger)}) == 1


def test_a_nested_unknown_key_is_named_by_its_path(client):
    spec = presets.get("seed-tape")
    spec = {**spec, "optimizer": {**spec["optimizer"], "eps": 1e-8}}
    assert fields_listed(problem_at(client.post("/api/trace", json={"spec": spec}), "optimizer.eps"))


def test_a_huge_key_is_not_echoed_back_whole(client):
    key = "k" * 100_000
    reply = client.post("/api/snapshots", json={"spec": presets.get("seed-tape"), key: 1})
    assert reply.status_code == 400
    assert all(len(p["path"]) <= 200 for p in reply.get_json()["problems"])
