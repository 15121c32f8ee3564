"""One kind of mistake reads one way wherever it is sent: the same out-of-range integer, or the same wrong type, in a
spec (/api/trace), in a snapshot body (/api/snapshots) and in a ledger query (/api/ledger) gets one sentence shape
(backend.models.fields), at the field's path."""
import re

import pytest

from backend.models import presets

OUT_OF_RANGE = re.compile(r"^must be a whole number from [\d,]+ to [\d,]+; got -1$")
WRONG_TYPE = re.compile(r'^must be a whole number from [\d,]+ to [\d,]+, not "many"$')
NOT_A_CHOICE = re.compile(r'^must be one of ("[\w]+", )+"[\w]+"; got "int8"$')


def problem_at(reply, path):
    assert reply.status_code == 400, reply.get_data(as_text=True)[:300]
    return next(p["message"] for p in reply.get_json()["problems"] if p["path"] == path)


def sent_everywhere(client, value):
    """The message each endpoint gives for `value` where a whole number belongs."""
    spec = presets.get("seed-tape")
    in_spec = problem_at(client.post("/api/trace", json={"spec": {**spec, "batch": value}}), "batch")
    in_snapshot = problem_at(client.post("/api/snapshots", json={"spec": spec, "view": {"step": value}}), "view.step")
    in_ledger = problem_at(client.get("/api/ledger", query_string={"batch": value}), "batch")
    return in_spec, in_snapshot, in_ledger


@pytest.mark.parametrize("value, sentence", [(-1, OUT_OF_RANGE), ("many", WRONG_TYPE)])
def test_the_same_mistake_reads_the_same_on_every_endpoint(client, value, sentence):
    messages = sent_everywhere(client, value)
    assert all(sentence.match(message) for message in messages), messages


def test_the_range_said_is_each_fields_own(client):
    in_spec, in_snapshot, in_ledger = sent_everywhere(client, -1)
    assert in_spec.startswith("must be a whole number from 1 to 4,096;")
    assert in_snapshot.startswith("must be a whole number from 0 to 1,000,000;")
    assert in_ledger.startswith("must be a whole number from 1 to 65,536;")


def test_a_value_not_among_the_choices_reads_the_same_in_a_spec_and_a_ledger_query(client):
    spec = {**presets.get("seed-tape"), "dtype": "int8"}
    in_spec = problem_at(client.post("/api/trace", json={"spec": spec}), "dtype")
    in_ledger = problem_at(client.get("/api/ledger?dtype=int8"), "dtype")
    assert NOT_A_CHOICE.match(in_spec) and NOT_A_CHOICE.match(in_ledger), (in_spec, in_ledger)


def test_a_missing_field_says_what_to_give(client):
    reply = client.post("/api/snapshots", json={"spec": presets.get("seed-tape"), "view": {}})
    assert problem_at(reply, "view.step") == "is missing: give a whole number from 0 to 1,000,000"
