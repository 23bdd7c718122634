"""Validates YAML or JSON files against a JSON Schema, for tests/lit/docs/.

Debian's python3 has no `jsonschema` package, so this is a small independent validator of the
draft 2020-12 subset that compiler/docs/json_schema.cpp emits: type, enum, const, pattern,
properties, required, additionalProperties, items, $ref (to #/$defs/...), allOf, anyOf, oneOf,
not, if/then/else, minimum, maximum, exclusiveMinimum, exclusiveMaximum. Any other keyword is
an error here, so the generator cannot start relying on one this file does not check.
Annotations (title, description, default, deprecated, enumDescriptions, $schema) are skipped.

Usage: validate_schema.py SCHEMA FILE...
Prints `ok FILE` or `invalid FILE: PATH: MESSAGE` per file; exits 1 when any file is invalid.
Files are read as Accelerate reads them: PyYAML's safe_load (YAML 1.1), json.load for `.json`.
"""
import json
import re
import sys

import yaml

ANNOTATIONS = {"$schema", "title", "description", "default", "deprecated", "enumDescriptions", "$defs"}


class Invalid(Exception):
    # `shallow`: the value has the wrong type or is not an allowed constant; anyOf prefers
    # another alternative's error, which says more.
    def __init__(self, path, message, shallow=False):
        super().__init__(f"{path or '/'}: {message}")
        self.path = path
        self.shallow = shallow


def type_matches(value, name):
    # bool is an int in Python; JSON Schema keeps them apart.
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        # As the spec says, 2e8 (a float with no fraction) is an integer.
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {name!r} in schema")


def equal(a, b):
    # JSON equality: true is not 1, 1 is 1.0.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


class Validator:
    def __init__(self, root):
        self.root = root

    def resolve(self, ref):
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        return self.root["$defs"][ref[len("#/$defs/"):]]

    def valid(self, value, schema, path):
        return self.error(value, schema, path) is None

    def error(self, value, schema, path):
        try:
            self.check(value, schema, path)
            return None
        except Invalid as e:
            return e

    def check(self, value, schema, path):
        if schema is True:
            return
        if schema is False:
            raise Invalid(path, "no value is allowed here")
        for key in schema:
            if key not in ANNOTATIONS and key not in CHECKS:
                raise ValueError(f"validator does not support keyword {key!r}")
        for key, check in CHECKS.items():
            if key in schema:
                check(self, value, schema, path)


def check_ref(v, value, schema, path):
    v.check(value, v.resolve(schema["$ref"]), path)


def check_type(v, value, schema, path):
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not any(type_matches(value, n) for n in names):
        raise Invalid(path, f"{value!r} is not of type {'/'.join(names)}", shallow=True)


def check_enum(v, value, schema, path):
    if not any(equal(value, e) for e in schema["enum"]):
        raise Invalid(path, f"{value!r} is not one of {schema['enum']}", shallow=True)


def check_const(v, value, schema, path):
    if not equal(value, schema["const"]):
        raise Invalid(path, f"{value!r} is not {schema['const']!r}", shallow=True)


def check_pattern(v, value, schema, path):
    if isinstance(value, str) and not re.search(schema["pattern"], value):
        raise Invalid(path, f"{value!r} does not match {schema['pattern']}")


def check_numeric(v, value, schema, path):
    if not type_matches(value, "number"):
        return
    bounds = {
        "minimum": lambda x, b: x >= b,
        "maximum": lambda x, b: x <= b,
        "exclusiveMinimum": lambda x, b: x > b,
        "exclusiveMaximum": lambda x, b: x < b,
    }
    for key, holds in bounds.items():
        if key in schema and not holds(value, schema[key]):
            raise Invalid(path, f"{value!r} violates {key} {schema[key]}")


def check_properties(v, value, schema, path):
    if not isinstance(value, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key in value:
            v.check(value[key], sub, f"{path}/{key}")


def check_required(v, value, schema, path):
    if isinstance(value, dict):
        for key in schema["required"]:
            if key not in value:
                raise Invalid(path, f"required key {key!r} is missing")


def check_additional(v, value, schema, path):
    if not isinstance(value, dict):
        return
    known = schema.get("properties", {})
    for key, item in value.items():
        if key in known:
            continue
        extra = schema["additionalProperties"]
        if extra is False:
            raise Invalid(path, f"unknown key {key!r}")
        v.check(item, extra, f"{path}/{key}")


def check_items(v, value, schema, path):
    if isinstance(value, list):
        for i, item in enumerate(value):
            v.check(item, schema["items"], f"{path}/{i}")


def check_all_of(v, value, schema, path):
    for sub in schema["allOf"]:
        v.check(value, sub, path)


def check_any_of(v, value, schema, path):
    errors = []
    for sub in schema["anyOf"]:
        error = v.error(value, sub, path)
        if error is None:
            return
        errors.append(error)
    # The alternative that got furthest into the value says best what is wrong (for `X?`, the
    # error inside X rather than "not null").
    deepest = max(errors, key=lambda e: (len(e.path), not e.shallow))
    if deepest.path != path or not deepest.shallow:
        raise deepest
    raise Invalid(path, f"{value!r} matches none of the {len(errors)} alternatives")


def check_one_of(v, value, schema, path):
    hits = sum(v.valid(value, sub, path) for sub in schema["oneOf"])
    if hits != 1:
        raise Invalid(path, f"{value!r} matches {hits} alternatives of oneOf, not exactly 1")


def check_not(v, value, schema, path):
    if v.valid(value, schema["not"], path):
        raise Invalid(path, f"{value!r} must not match {schema['not']}")


def check_if(v, value, schema, path):
    branch = "then" if v.valid(value, schema["if"], path) else "else"
    if branch in schema:
        v.check(value, schema[branch], path)


CHECKS = {
    "$ref": check_ref,
    "type": check_type,
    "enum": check_enum,
    "const": check_const,
    "pattern": check_pattern,
    "minimum": check_numeric,
    "maximum": check_numeric,
    "exclusiveMinimum": check_numeric,
    "exclusiveMaximum": check_numeric,
    "properties": check_properties,
    "required": check_required,
    "additionalProperties": check_additional,
    "items": check_items,
    "allOf": check_all_of,
    "anyOf": check_any_of,
    "oneOf": check_one_of,
    "not": check_not,
    "if": check_if,
    "then": lambda *args: None,  # applied by `if`
    "else": lambda *args: None,
}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f) if path.endswith(".json") else yaml.safe_load(f)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        sys.exit(f"{argv[1]}: not a draft 2020-12 schema")
    validator = Validator(schema)
    failures = 0
    for name in argv[2:]:
        try:
            validator.check(load(name), schema, "")
            print(f"ok {name}")
        except Invalid as e:
            failures += 1
            print(f"invalid {name}: {e}")
    print(f"{len(argv) - 2 - failures} of {len(argv) - 2} files valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
