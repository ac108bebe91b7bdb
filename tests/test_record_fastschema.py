"""The compiled record-schema test (perfsuite.record.fastschema) answers as jsonschema does.

The loader skips jsonschema when the compiled test says a record is valid, so the test must
never accept what jsonschema rejects: checked on the keywords whose meaning differs between
drafts or between Python and JSON, and on records mutated at random paths (hypothesis), where
the loader's error must also be the same on the fast path and the reference path.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfsuite.record import RecordError
from perfsuite.record.fastschema import UnsupportedSchema, compile_schema
from perfsuite.record.io import record_schema, schema_errors, strip_private, validate_record

EXAMPLES = int(os.environ.get("PERFSUITE_FUZZ_EXAMPLES", "40"))
COMPILED = compile_schema(record_schema())


def _agree(schema: dict[str, Any], instance: Any) -> bool:
    """Whether the compiled test and jsonschema agree; returns the compiled answer."""
    import jsonschema  # here, not at collection: seconds of import on every test worker

    compiled = compile_schema(schema)(instance)
    assert compiled == jsonschema.Draft202012Validator(schema).is_valid(instance), instance
    return compiled


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"type": "integer"}, 1.0, True),  # draft 6+: 1.0 is an integer
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"type": ["string", "null"]}, None, True),
        ({"const": 1}, True, False),  # JSON's true is not 1, though Python's True == 1
        ({"const": 1}, 1.0, True),
        ({"enum": [0, "a"]}, False, False),
        ({"enum": [[1, 2]]}, [1, 2], True),
        ({"minimum": 0}, -1e-9, False),
        ({"minimum": 0}, "text", True),  # bounds apply to numbers only
        ({"exclusiveMinimum": 0}, 0, False),
        ({"maximum": 1}, 1, True),
        ({"minLength": 1}, "", False),
        ({"pattern": "^[0-9a-f]{4}$"}, "00fz", False),
        ({"pattern": "b"}, "abc", True),  # search, not match
        ({"required": ["a"]}, {"b": 1}, False),
        ({"required": ["a"]}, [1], True),
        ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"b": 1},
         False),
        ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
         {"a": "x", "b": 1.5}, False),
        ({"minProperties": 1}, {}, False),
        ({"items": {"type": "integer"}, "minItems": 2, "maxItems": 3}, [1, 2, 3, 4], False),
        ({"items": False}, [], True),
        ({"items": False}, [1], False),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3, False),  # both match: not one
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None, False),
        ({"if": {"minimum": 5}, "then": {"maximum": 6}, "else": {"const": 1}}, 7, False),
        ({"if": {"minimum": 5}, "then": {"maximum": 6}, "else": {"const": 1}}, 2, False),
        # 2020-12: keywords beside $ref apply too (draft 7 ignored them)
        ({"$defs": {"n": {"type": "number"}}, "$ref": "#/$defs/n", "maximum": 1}, 2, False),
        ({"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"},
         [[[]], [1]], False),  # a recursive $ref
    ],
)  # fmt: skip
def test_compiled_keywords_mean_what_jsonschema_means(schema, instance, valid):
    assert _agree(schema, instance) is valid


@pytest.mark.parametrize(
    "schema",
    [
        {"patternProperties": {"^x": {}}},
        {"format": "date-time"},
        {"$ref": "other.json#/$defs/x"},
        {"$defs": {"a": {"$id": "inner", "type": "string"}}},
        {"type": "float"},
    ],
)
def test_a_schema_outside_the_compiled_keywords_is_refused(schema):
    with pytest.raises(UnsupportedSchema):
        compile_schema(schema)


def test_the_loader_takes_the_fast_path_only_when_the_compiled_test_says_valid(real_record):
    bad = {**real_record, "status": 3}
    assert schema_errors(real_record) == [] and schema_errors(bad)[0].validator == "enum"


# Values a mutation puts in a record: JSON's types, near the bounds the schema sets.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.0, -0.5, 1.0, 2.5, 1e30]),
    st.sampled_from(["", "s", "FLOP/s", "measured", "modeled", "reached", "a" * 64, "0" * 64]),
    st.just([]),
    st.just({}),
    st.lists(st.integers(min_value=-1, max_value=2), max_size=2),
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into `node` (dict keys and list indices)."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(record: dict[str, Any], path: tuple, action: str, value: Any) -> dict[str, Any]:
    """`record` with the node at `path` replaced, deleted, or given a new key/element."""
    out = copy.deepcopy(record)
    if not path:
        return out
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent[last], dict):
        parent[last]["unexpected_key" if value is None else "status"] = value
    elif action == "add" and isinstance(parent[last], list):
        parent[last].append(value)
    else:
        parent[last] = value
    return out


def _error(record: dict[str, Any], fast: bool) -> str | None:
    try:
        validate_record(record, "run.json", fast=fast)
    except RecordError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def real_record(h100_dir):
    from perfsuite.record import load_record

    return strip_private(load_record(h100_dir))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), action=st.sampled_from(["replace", "delete", "add"]), value=_VALUES)
def test_mutated_records_get_the_same_answer_and_error(real_record, data, action, value):
    paths = _paths(real_record)
    path = paths[data.draw(st.integers(min_value=0, max_value=len(paths) - 1))]
    record = _mutate(real_record, path, action, value)
    assert COMPILED(record) == (not schema_errors(record, fast=False)), path
    assert _error(record, fast=True) == _error(record, fast=False)


def test_the_real_record_is_valid_on_both_paths(real_record):
    assert COMPILED(real_record) and not schema_errors(real_record, fast=False)
    assert _error(real_record, fast=True) is None
    assert record_schema()["$schema"].endswith("2020-12/schema")
