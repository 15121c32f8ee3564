"""The vocabulary the trace document's declaration (backend/trace/declaration.py) is written in: fields, records,
tables, named types, how version 2 writes or derives a column, and helpers for JSON Schema types.

A type is a JSON Schema fragment (a dict) that may hold a `Named` type or a `Record`; backend/trace/schemas.py renders
it for each form.
"""
from dataclasses import KW_ONLY, dataclass


@dataclass(frozen=True)
class Named:
    """A type with a name: the schemas write it once (under $defs) and every field of it refers to it."""
    name: str
    type: object


@dataclass(frozen=True)
class Version:
    """The schema_version of the form being written: 1 in the expanded form, 2 in the packed one."""


@dataclass(frozen=True)
class Derived:
    """How a reader gets a field version 2 leaves out: `how` is one of DERIVATIONS, `source` the field it reads."""
    how: str
    source: str | None = None


# how -> the words the packed schema says it in
DERIVATIONS = {
    "row": "the row's own index",
    "storage": "its storage's {source}",
    "op": "its op's {source} in ops",
    "entry": "its tape entry's {source}",
    "sum": "the sum of its {source}",
    "graph": "the graph the tape and the tensors draw",
}

PLAIN, CODED, SCOPED, STATISTICS, NESTED = "plain", "coded", "scoped", "statistics", "nested"
# column -> what version 2 writes in place of the field's values
COLUMN_WORDS = {
    CODED: "coded: the distinct values once, an index per row",
    SCOPED: "an index into scopes (null stays null)",
    STATISTICS: "as statistics arrays",
    NESTED: "one column per key",
}


@dataclass(frozen=True)
class Field:
    name: str
    type: object
    description: str | None = None
    _: KW_ONLY
    required: bool = True
    column: str = PLAIN                  # how version 2 writes it in a table
    derived: Derived | None = None       # version 2 leaves it out when every row agrees with this
    packed_description: str | None = None    # what version 2's column holds, when the field's words do not say it
    packed_only: bool = False            # a field of version 2 alone (scopes, ops)


@dataclass(frozen=True)
class Record:
    """An object of declared fields; `more` are further JSON Schema keywords on it."""
    fields: tuple
    description: str | None = None
    nullable: bool = False
    more: tuple = ()

    def field(self, name):
        return next(field for field in self.fields if field.name == name)


@dataclass(frozen=True)
class Table:
    """A list of records that version 2 writes as a table of columns ({count, columns, optional, sparse})."""
    record: Record


def record(*fields, description=None, nullable=False, **more):
    return Record(tuple(fields), description, nullable, tuple(more.items()))


def table(*fields, description=None):
    return Table(record(*fields, description=description))


def optional(name, type, description=None, **more):
    return Field(name, type, description, required=False, **more)


def flag(name, description):
    """An optional yes/no mark on a record (a JSON boolean): the description says which value marks what."""
    return optional(name, BOOL, description)


ANY = {}
STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
COUNT = {"type": "integer", "minimum": 0}          # a count, a size in bytes, a number of FLOPs


def integer(**limits):
    return {"type": "integer", **limits}


def number(**limits):
    return {"type": "number", **limits}


def string(**limits):
    return {"type": "string", **limits}


def const(value):
    return {"const": value}


def enum(*values, description=None):
    return {"enum": list(values), **({"description": description} if description else {})}


def array(items=None, **limits):
    return {"type": "array", **({} if items is None else {"items": items}), **limits}


def mapping(values, **more):
    """An object of any keys whose values are all `values`."""
    return {"type": "object", **more, "additionalProperties": values}


def nullable(schema):
    """`schema` or null (a schema of one "type")."""
    return {**schema, "type": [schema["type"], "null"]}


def one_of(*schemas):
    return {"oneOf": list(schemas)}


INTS = array(INT)
