"""Session rows: created empty, replaced whole, found only by their own id, pruned by age."""
from datetime import datetime, timedelta, timezone

from sqlalchemy.orm import Session

from backend.store import sessions

DOCUMENT = {"spec": {"preset": "lab1-mlp"}, "checkpoint": {"policy": "none"},
            "view": {"step": 5, "selected": "n2", "zoom": {"k": 2.0, "x": 1, "y": -3}},
            "history": {"undo": [{"spec": {"preset": "seed-tape"}}], "redo": []},
            "origin": {"kind": "preset", "preset": "lab1-mlp"}, "baseline": None}


def test_new_session_is_empty_and_has_a_long_random_id(engine):
    with Session(engine) as db:
        first, second = sessions.create(db), sessions.create(db)
    assert first.id != second.id and len(first.id) >= 43
    assert first.document() == {"spec": None, "checkpoint": None, "view": sessions.EMPTY_VIEW,
                                "history": sessions.EMPTY_HISTORY, "origin": None, "baseline": None}


def test_a_save_from_a_stale_version_raises_with_the_current_workspace(engine):
    with Session(engine) as db:
        created = sessions.create(db)
        newer = sessions.save(db, created.id, DOCUMENT, base_version=created.version)
        try:
            sessions.save(db, created.id, {**DOCUMENT, "spec": {"stale": True}}, base_version=created.version)
        except sessions.StaleVersion as stale:
            assert stale.current.version == newer.version and stale.current.spec == DOCUMENT["spec"]
        else:
            raise AssertionError("a stale save landed")


def test_save_replaces_the_document_and_it_reads_back(engine):
    with Session(engine) as db:
        created = sessions.create(db)
        saved = sessions.save(db, created.id, DOCUMENT)
    assert saved.updated_at >= created.updated_at
    with Session(engine) as db:
        assert sessions.get(db, created.id).document() == DOCUMENT


def test_sessions_do_not_see_each_other(engine):
    with Session(engine) as db:
        mine, theirs = sessions.create(db), sessions.create(db)
        sessions.save(db, mine.id, DOCUMENT)
        assert sessions.get(db, theirs.id).spec is None


def test_unknown_and_empty_ids_find_nothing(engine):
    with Session(engine) as db:
        assert sessions.get(db, "no-such-session") is None
        assert sessions.get(db, "") is None
        assert sessions.get(db, None) is None
        assert sessions.save(db, "no-such-session", DOCUMENT) is None


def test_prune_deletes_only_old_sessions(engine):
    with Session(engine) as db:
        kept = sessions.create(db)
        assert sessions.prune(db, datetime.now(timezone.utc) - timedelta(days=1)) == 0
        assert sessions.prune(db, datetime.now(timezone.utc) + timedelta(seconds=1)) == 1
        assert sessions.get(db, kept.id) is None
