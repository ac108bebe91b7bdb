"""A yes/no JSON Schema test compiled once from a schema into nested Python closures.

jsonschema walks the schema for every instance, making a validator object per level and
resolving every `$ref` through its registry; for a record that is most of the loading time.
The compiled test answers only "valid or not", with draft 2020-12's meaning for the keywords
it knows, and the loader still asks jsonschema to word the error whenever this test says no
(and trusts jsonschema's answer), so a test stricter than jsonschema costs time, never a
result. A schema using any keyword outside KEYWORDS (or a `$ref` other than a local
`#/$defs/NAME`) is refused with UnsupportedSchema, and the loader then uses jsonschema alone:
a keyword this module does not know can never be skipped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that assert something, each given draft 2020-12's meaning below.
KEYWORDS = frozenset(
    {
        "type", "$ref", "properties", "required", "additionalProperties", "items", "const",
        "enum", "allOf", "anyOf", "oneOf", "if", "then", "else", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minLength",
        "maxLength", "minProperties", "pattern",
    }
)  # fmt: skip
# Keywords that assert nothing (annotations and the definitions themselves).
ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
)
_DEFS_REF = re.compile(r"#/\$defs/([A-Za-z0-9_.-]+)")


class UnsupportedSchema(ValueError):
    """The schema uses something this compiler does not implement; the message says what."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_integer(x: Any) -> bool:
    """Draft 6 and later: 1.0 is an integer; a bool never is."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "number": _is_number,
    "integer": _is_integer,
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as JSON Schema's const and enum mean it: 1 == 1.0, but true != 1."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _every(checks: list[Check]) -> Check:
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]

    def check(x: Any) -> bool:
        for c in checks:  # noqa: SIM110 - a plain loop: all() over a generator is slower here
            if not c(x):
                return False
        return True

    return check


class _Compiler:
    """Compiles schema nodes; `$ref`s are looked up at call time, so recursion works."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.defs: dict[str, Check] = {}
        raw_defs = root.get("$defs", {})
        if not isinstance(raw_defs, Mapping):
            raise UnsupportedSchema("$defs is not an object")
        self.names = set(raw_defs)
        for name, node in raw_defs.items():
            self.defs[name] = self.node(node, top=False)

    def ref(self, target: Any) -> Check:
        match = _DEFS_REF.fullmatch(target) if isinstance(target, str) else None
        if match is None or match.group(1) not in self.names:
            raise UnsupportedSchema(f"$ref {target!r} is not a local #/$defs/NAME")
        defs, name = self.defs, match.group(1)
        return lambda x: defs[name](x)

    def node(self, schema: Any, top: bool) -> Check:
        if schema is True or schema is False:
            value = bool(schema)
            return lambda x: value
        if not isinstance(schema, Mapping):
            raise UnsupportedSchema(f"a schema that is not an object: {schema!r}")
        unknown = set(schema) - KEYWORDS - ANNOTATIONS
        if unknown:
            raise UnsupportedSchema(f"keywords {sorted(unknown)}")
        if not top and ("$id" in schema or "$defs" in schema):
            raise UnsupportedSchema("$id or $defs below the root")
        checks = [c for c in (self.type_check(schema), self.scalar_check(schema)) if c]
        checks += self.object_checks(schema) + self.array_checks(schema)
        checks += self.combinator_checks(schema)
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        return _every(checks)

    def type_check(self, schema: Mapping[str, Any]) -> Check | None:
        if "type" not in schema:
            return None
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if any(n not in _TYPES for n in names):
            raise UnsupportedSchema(f"type {schema['type']!r}")
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        return lambda x: any(t(x) for t in tests)

    def scalar_check(self, schema: Mapping[str, Any]) -> Check | None:
        """const, enum, the numeric bounds and the string keywords, fused in one closure."""
        has = {k: schema[k] for k in schema if k in _SCALAR_KEYWORDS}
        if not has:
            return None
        if "pattern" in has:
            has["pattern"] = re.compile(has["pattern"])

        tests = [(_SCALAR_KEYWORDS[key], bound) for key, bound in has.items()]

        def check(x: Any) -> bool:
            for test, bound in tests:  # noqa: SIM110 - as in _every
                if not test(x, bound):
                    return False
            return True

        return check

    def object_checks(self, schema: Mapping[str, Any]) -> list[Check]:
        out: list[Check] = []
        props = {k: self.node(v, False) for k, v in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties")
        extra_check = None if extra is None else self.node(extra, False)
        if props or extra_check is not None:

            def check_props(x: Any) -> bool:
                if not isinstance(x, dict):
                    return True
                for key, value in x.items():
                    c = props.get(key, extra_check)
                    if c is not None and not c(value):
                        return False
                return True

            out.append(check_props)
        required = list(schema.get("required", ()))
        if required:
            out.append(lambda x: not isinstance(x, dict) or all(k in x for k in required))
        if "minProperties" in schema:
            least = schema["minProperties"]
            out.append(lambda x: not isinstance(x, dict) or len(x) >= least)
        return out

    def array_checks(self, schema: Mapping[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "items" in schema:
            item = self.node(schema["items"], False)
            out.append(lambda x: not isinstance(x, list) or all(item(v) for v in x))
        if "minItems" in schema:
            least = schema["minItems"]
            out.append(lambda x: not isinstance(x, list) or len(x) >= least)
        if "maxItems" in schema:
            most = schema["maxItems"]
            out.append(lambda x: not isinstance(x, list) or len(x) <= most)
        return out

    def combinator_checks(self, schema: Mapping[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "allOf" in schema:
            out.append(_every([self.node(s, False) for s in schema["allOf"]]))
        if "anyOf" in schema:
            anyof = [self.node(s, False) for s in schema["anyOf"]]
            out.append(lambda x: any(c(x) for c in anyof))
        if "oneOf" in schema:
            oneof = [self.node(s, False) for s in schema["oneOf"]]
            out.append(lambda x: sum(1 for c in oneof if c(x)) == 1)
        if "if" in schema:
            cond = self.node(schema["if"], False)
            then = self.node(schema.get("then", True), False)
            other = self.node(schema.get("else", True), False)
            out.append(lambda x: then(x) if cond(x) else other(x))
        return out


def _length_ok(x: Any, bound: int, at_least: bool) -> bool:
    if not isinstance(x, str):
        return True
    return len(x) >= bound if at_least else len(x) <= bound


_SCALAR_KEYWORDS: dict[str, Callable[[Any, Any], bool]] = {
    "const": json_equal,
    "enum": lambda x, options: any(json_equal(x, o) for o in options),
    "minimum": lambda x, b: not _is_number(x) or x >= b,
    "maximum": lambda x, b: not _is_number(x) or x <= b,
    "exclusiveMinimum": lambda x, b: not _is_number(x) or x > b,
    "exclusiveMaximum": lambda x, b: not _is_number(x) or x < b,
    "minLength": lambda x, b: _length_ok(x, b, True),
    "maxLength": lambda x, b: _length_ok(x, b, False),
    "pattern": lambda x, p: not isinstance(x, str) or p.search(x) is not None,
}


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A function telling whether an instance is valid against `schema` (draft 2020-12).

    Raises UnsupportedSchema when the schema uses anything outside KEYWORDS and ANNOTATIONS,
    a `$ref` other than `#/$defs/NAME`, or `$id`/`$defs` below the root."""
    compiler = _Compiler(schema)
    return compiler.node(schema, top=True)
