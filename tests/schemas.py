"""Does a document match one of docs/'s JSON schemas? Asked as the server asks (backend/trace/intake.py): jsonschema-rs
first (~150× faster on a large document), jsonschema when it says no, to word the problem; a NaN, which jsonschema-rs
refuses as no JSON number, is taken as a number, as the server takes it (tests/trace/test_schema_validators.py)."""
import json

import jsonschema
import jsonschema_rs

_compiled = {}          # id(schema) -> (schema, its jsonschema-rs validator): the schema is kept, so its id is too


def assert_matches_schema(document, schema):
    """Raise jsonschema's ValidationError (path and message) unless `document`, as JSON, matches `schema`."""
    plain = json.loads(json.dumps(document))
    kept, fast = _compiled.get(id(schema), (None, None))
    if kept is not schema:
        fast = jsonschema_rs.validator_for(schema)
        _compiled[id(schema)] = (schema, fast)
    if not fast.is_valid(plain):
        jsonschema.validate(plain, schema)
