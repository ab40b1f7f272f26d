"""Tool-argument validation (Pi's validation.test.ts and TypeBox's conversion rules)."""

from __future__ import annotations

import builtins
import copy
import json
from typing import Any

import pytest
from pydantic import BaseModel

from pi_notebook.ai.types import Tool, ToolCall
from pi_notebook.ai.validation import (
    TypeBoxSchema,
    js_number_to_string,
    validate_tool_arguments,
    validate_tool_call,
)


def tool(parameters: Any, name: str = "echo") -> Tool:
    tool = Tool(name=name, description="Echo tool")
    tool.parameters = parameters  # keep the exact object (a TypeBoxSchema stays one)
    return tool


def call(arguments: Any, name: str = "echo") -> ToolCall:
    return ToolCall(id="tool-1", name=name, arguments=arguments)


def wrapped(schema: Any, value: Any) -> tuple[Tool, ToolCall]:
    """Pi's createToolCallWithPlainSchema: ``{value: <schema>}``, required."""
    params = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    return tool(params), call({"value": value})


def same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # 1 vs 1.0 vs True differ


# --- validation.test.ts ---------------------------------------------------------------------------


def test_still_validates_when_code_generation_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise RuntimeError("Code generation from strings disallowed for this context")

    for name in ("exec", "eval", "compile"):
        monkeypatch.setattr(builtins, name, refuse)
    schema = TypeBoxSchema(type="object", properties={"count": {"type": "number"}}, required=["count"])
    assert same_json(validate_tool_arguments(tool(schema), call({"count": "42"})), {"count": 42})
    plain = {"type": "object", "properties": {"count": {"type": "number"}}, "required": ["count"]}
    assert same_json(validate_tool_arguments(tool(plain), call({"count": "42"})), {"count": 42})


PLAIN_COERCIONS = [
    ({"type": "number"}, "42", 42),
    ({"type": "number"}, True, 1),
    ({"type": "number"}, None, 0),
    ({"type": "integer"}, "42", 42),
    ({"type": "boolean"}, "true", True),
    ({"type": "boolean"}, "false", False),
    ({"type": "boolean"}, 1, True),
    ({"type": "boolean"}, 0, False),
    ({"type": "string"}, None, ""),
    ({"type": "string"}, True, "true"),
    ({"type": "null"}, "", None),
    ({"type": "null"}, 0, None),
    ({"type": "null"}, False, None),
    ({"type": ["number", "string"]}, "1", "1"),  # already a member: unchanged
    ({"type": ["boolean", "number"]}, "1", 1),
    ({"type": ["array", "null"], "items": {"type": "string"}}, None, None),  # nullable array
    # beyond Pi's test, same rules
    ({"type": "number"}, " 4.5 ", 4.5),
    ({"type": "number"}, "0x10", 16),
    ({"type": "string"}, 4.5, "4.5"),
    ({"type": "string"}, 1e21, "1e+21"),
    ({"type": "integer"}, False, 0),
    ({"type": "array", "items": {"type": "number"}}, ["1", 2], [1, 2]),
    (
        {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]},
        [1, "true", "x"],
        ["1", True, "x"],
    ),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "7"}, {"a": 7}),
    ({"allOf": [{"type": "string"}]}, 5, "5"),
    ({"anyOf": [{"type": "number"}, {"type": "boolean"}]}, "true", True),
    ({"oneOf": [{"type": "null"}, {"type": "integer"}]}, "3", 3),
]


@pytest.mark.parametrize(("schema", "value", "expected"), PLAIN_COERCIONS)
def test_plain_json_schema_coercion(schema: dict[str, Any], value: Any, expected: Any) -> None:
    result = validate_tool_arguments(*wrapped(schema, value))
    assert same_json(result, {"value": expected}), result


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "boolean"}, "1"),
        ({"type": "boolean"}, "0"),
        ({"type": "null"}, "null"),
        ({"type": "integer"}, "42.1"),
        # beyond Pi's test
        ({"type": "number"}, "abc"),
        ({"type": "number"}, "   "),
        ({"type": "number"}, "1_000"),
        ({"type": "number"}, "Infinity"),
        ({"type": "string"}, [1]),
        ({"type": "boolean"}, 2),
    ],
)
def test_rejects_invalid_plain_coercions(schema: dict[str, Any], value: Any) -> None:
    with pytest.raises(ValueError, match="Validation failed"):
        validate_tool_arguments(*wrapped(schema, value))


# --- TypeBox Value.Convert: how Pi coerces each primitive ---------------------------------------------------

REJECT = object()
TYPEBOX_TABLE = [
    ("string", 42, "42"),
    ("string", 4.5, "4.5"),
    ("string", True, "true"),
    ("string", False, "false"),
    ("string", None, "null"),
    ("string", [1], REJECT),
    ("string", {"a": 1}, REJECT),
    ("number", "42", 42),
    ("number", "4.5", 4.5),
    ("number", "true", 1),
    ("number", "false", 0),
    ("number", "", 0),
    ("number", True, 1),
    ("number", False, 0),
    ("number", None, 0),
    ("number", "abc", REJECT),
    ("number", [1], REJECT),
    ("number", {"a": 1}, REJECT),
    ("integer", "42", 42),
    ("integer", "4.5", 4),
    ("integer", 4.5, 4),
    ("integer", "true", 1),
    ("integer", "", 0),
    ("integer", True, 1),
    ("integer", None, 0),
    ("integer", "abc", REJECT),
    ("integer", [1], REJECT),
    ("integer", {"a": 1}, REJECT),
    ("boolean", "true", True),
    ("boolean", "false", False),
    ("boolean", "1", True),
    ("boolean", "0", False),
    ("boolean", 1, True),
    ("boolean", 0, False),
    ("boolean", None, False),
    ("boolean", "42", REJECT),
    ("boolean", "", REJECT),
    ("boolean", 42, REJECT),
    ("boolean", 4.5, REJECT),
    ("boolean", [1], REJECT),
    ("boolean", {"a": 1}, REJECT),
]


@pytest.mark.parametrize(("kind", "value", "expected"), TYPEBOX_TABLE)
def test_typebox_conversion_table(kind: str, value: Any, expected: Any) -> None:
    schema = TypeBoxSchema(type="object", properties={"x": {"type": kind}}, required=["x"])
    if expected is REJECT:
        with pytest.raises(ValueError, match=f"  - x: must be {kind}\n"):
            validate_tool_arguments(tool(schema), call({"x": value}))
    else:
        assert same_json(validate_tool_arguments(tool(schema), call({"x": value})), {"x": expected})


@pytest.mark.parametrize("schema_cls", [dict, TypeBoxSchema])
def test_array_items_convert_element_wise_and_fail_at_the_element(schema_cls: type) -> None:
    schema = schema_cls(type="object", properties={"x": {"type": "array", "items": {"type": "number"}}})
    with pytest.raises(ValueError) as caught:
        validate_tool_arguments(tool(schema), call({"x": ["1", 2, "x"]}))
    assert str(caught.value) == (
        'Validation failed for tool "echo":\n  - x.2: must be number\n\n'
        'Received arguments:\n{\n  "x": [\n    "1",\n    2,\n    "x"\n  ]\n}'
    )
    assert same_json(validate_tool_arguments(tool(schema), call({"x": ["1", 2]})), {"x": [1, 2]})


@pytest.mark.parametrize("schema_cls", [dict, TypeBoxSchema])
def test_extra_properties_are_kept_and_optional_ones_may_be_missing(schema_cls: type) -> None:
    schema = schema_cls(
        type="object", properties={"a": {"type": "string"}, "b": {"type": "number"}}, required=["a"]
    )
    assert validate_tool_arguments(tool(schema), call({"a": "x", "extra": [1]})) == {"a": "x", "extra": [1]}


# --- error format ----------------------------------------------------------------------------------


def test_error_message_lists_every_error_in_typebox_order() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "number"}}, "required": ["b", "c"]},
            "d": {"type": "string", "minLength": 3},
        },
        "required": ["a", "d", "e", "f"],
    }
    with pytest.raises(ValueError) as caught:
        validate_tool_arguments(
            tool(schema, name="t"), call({"a": {"b": "x"}, "d": "hi", "n": 1.0}, name="t")
        )
    assert str(caught.value) == "\n".join(
        [
            'Validation failed for tool "t":',
            "  - e: must have required properties e, f",
            "  - a.c: must have required properties c",
            "  - a.b: must be number",
            "  - d: must not have fewer than 3 characters",
            "",
            "Received arguments:",
            "{",
            '  "a": {',
            '    "b": "x"',
            "  },",
            '  "d": "hi",',
            '  "n": 1',  # JSON.stringify prints 1.0 as 1
            "}",
        ]
    )


def test_root_errors_and_unicode_in_received_arguments() -> None:
    tool_call = call({})
    tool_call.arguments = ["é"]  # type: ignore[assignment]  # a malformed call, as a provider may send
    with pytest.raises(ValueError) as caught:
        validate_tool_arguments(tool({"type": "object"}), tool_call)
    assert (
        str(caught.value)
        == 'Validation failed for tool "echo":\n  - root: must be object\n\nReceived arguments:\n[\n  "é"\n]'
    )


def test_keys_with_slashes_are_pointer_encoded_in_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"a/b": {"type": "object", "properties": {"c~d": {"type": "string"}}}},
    }
    with pytest.raises(ValueError, match=r"  - a~1b\.c~0d: must be string"):
        validate_tool_arguments(tool(schema), call({"a/b": {"c~d": [1.5]}, "z": 1}))


VOCABULARY = [
    # (schema, value, error lines or None when valid)
    ({"type": ["string", "null"]}, None, None),
    ({"type": ["string", "integer"]}, [], ["value: must be either string or integer"]),
    ({"enum": ["a", "b"]}, "c", ["value: must be equal to one of the allowed values"]),
    ({"enum": [1, 2]}, True, ["value: must be equal to one of the allowed values"]),
    ({"enum": [{"k": [1]}]}, {"k": [1.0]}, None),
    ({"const": 3}, 3.0, None),
    ({"const": False}, 0, ["value: must be equal to constant"]),
    ({"type": "number", "minimum": 0.5, "maximum": 1e21}, 0, ["value: must be >= 0.5"]),
    ({"type": "number", "maximum": 10.0}, 11, ["value: must be <= 10"]),
    ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5}, 5, ["value: must be < 5"]),
    ({"type": "integer", "exclusiveMinimum": 0}, 0, ["value: must be > 0"]),
    ({"type": "number", "multipleOf": 0.1}, 0.3, None),
    ({"type": "number", "multipleOf": 2}, 3, ["value: must be multiple of 2"]),
    ({"type": "string", "maxLength": 2}, "abc", ["value: must not have more than 2 characters"]),
    ({"type": "string", "pattern": "^[a-z]+$"}, "aB", ['value: must match pattern "^[a-z]+$"']),
    ({"type": "string", "pattern": "b"}, "abc", None),  # patterns are unanchored
    ({"type": "array", "minItems": 2}, [1], ["value: must not have fewer than 2 items"]),
    ({"type": "array", "maxItems": 1, "uniqueItems": True}, [1, 1.0], [
        "value: must not have more than 1 items", "value: must not have duplicate items"]),
    ({"type": "array", "items": [{"type": "string"}], "maxItems": 2}, ["a", 2], None),  # tuple: 2nd free
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, ["a", 1, "z"],
     ["value.2: must be integer"]),
    ({"type": "array", "contains": {"type": "string"}}, [1, 2],
     ["value: must contain at least 1 valid item"]),
    ({"type": "object", "additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2},
     ["value: must not have additional properties"]),
    ({"type": "object", "additionalProperties": {"type": "string"}}, {"a": "x", "b": 2}, None),  # "2"
    ({"type": "object", "additionalProperties": {"type": "string"}}, {"a": "x", "b": [2]},
     ["value: must not have additional properties"]),
    ({"type": "object", "patternProperties": {"^n_": {"type": "integer"}}, "additionalProperties": False},
     {"n_a": 1, "n_b": "x"}, ["value.n_b: must be integer"]),
    ({"type": "object", "minProperties": 2}, {"a": 1}, ["value: must not have fewer than 2 properties"]),
    ({"anyOf": [{"type": "string"}, {"type": "object", "required": ["k"]}]}, {}, [
        "value: must be string", "value.k: must have required properties k",
        "value: must match a schema in anyOf"]),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 3,
     ["value: must match exactly one schema in oneOf"]),
    ({"oneOf": [{"type": "string"}, {"type": "array"}]}, {}, [
        "value: must be string", "value: must be array", "value: must match exactly one schema in oneOf"]),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1, ["value: must be >= 2"]),
    ({"not": {"type": "string"}}, "s", ["value: must not be valid"]),
    ({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "integer"}}},
     {"n": 1.5}, ["value.n: must be integer"]),
    (False, 1, ["value: schema is false"]),
    ({"type": "mystery"}, 1, None),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "value", "errors"), VOCABULARY)
def test_json_schema_vocabulary(schema: Any, value: Any, errors: list[str] | None) -> None:
    root = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    if isinstance(schema, dict) and "$defs" in schema:  # refs resolve against the tool's root schema
        root["$defs"] = schema["$defs"]
        root["properties"] = {"value": {k: v for k, v in schema.items() if k != "$defs"}}
    args = {"value": value}
    if errors is None:
        validate_tool_arguments(tool(root), call(args))
        return
    with pytest.raises(ValueError) as caught:
        validate_tool_arguments(tool(root), call(args))
    lines = str(caught.value).split("\n\nReceived arguments:")[0].split("\n")[1:]
    assert lines == [f"  - {e}" for e in errors]


def test_the_callers_arguments_are_never_mutated() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number"}, "xs": {"type": "array", "items": {"type": "integer"}}},
    }
    arguments = {"n": "1", "xs": ["2", "3"], "nested": {"keep": ["me"]}}
    original = copy.deepcopy(arguments)
    tool_call = call(arguments)
    result = validate_tool_arguments(tool(schema), tool_call)
    assert same_json(result, {"n": 1, "xs": [2, 3], "nested": {"keep": ["me"]}})
    assert tool_call.arguments == original
    result["nested"]["keep"].append("changed")
    assert tool_call.arguments == original
    typebox = TypeBoxSchema(schema)
    validate_tool_arguments(tool(typebox), tool_call)
    assert tool_call.arguments == original


def test_a_schema_used_twice_with_different_objects_gives_independent_results() -> None:
    # Nothing is cached by id(): a new schema at a recycled address is validated afresh.
    for kind, value, ok in [("number", "1", True), ("boolean", "1", False), ("string", 1, True)]:
        schema = {"type": "object", "properties": {"v": {"type": kind}}, "required": ["v"]}
        if ok:
            validate_tool_arguments(tool(schema), call({"v": value}))
        else:
            with pytest.raises(ValueError):
                validate_tool_arguments(tool(schema), call({"v": value}))
        del schema


# --- pydantic parameters -----------------------------------------------------------------------------


class Inner(BaseModel):
    depth: int


class Params(BaseModel):
    path: str
    count: int = 1
    inner: Inner | None = None


def test_a_pydantic_model_validates_in_lax_mode_and_returns_the_instance() -> None:
    result = validate_tool_arguments(
        tool(Params), call({"path": "a.txt", "count": "3", "inner": {"depth": "2"}})
    )
    assert isinstance(result, Params)
    assert result == Params(path="a.txt", count=3, inner=Inner(depth=2))


def test_pydantic_errors_use_pis_format() -> None:
    with pytest.raises(ValueError) as caught:
        validate_tool_arguments(
            tool(Params, name="edit"), call({"count": "x", "inner": {"depth": []}}, name="edit")
        )
    head, received = str(caught.value).split("\n\nReceived arguments:\n")
    lines = head.split("\n")
    assert lines[0] == 'Validation failed for tool "edit":'
    assert lines[1] == "  - path: Field required"
    assert lines[2].startswith("  - count: Input should be a valid integer")
    assert lines[3].startswith("  - inner.depth: Input should be a valid integer")
    assert json.loads(received) == {"count": "x", "inner": {"depth": []}}


def test_validate_tool_call_finds_the_tool_by_name() -> None:
    tools = [tool({"type": "object"}, name="a"), tool({"type": "object", "required": ["x"]}, name="b")]
    assert validate_tool_call(tools, call({"k": 1}, name="a")) == {"k": 1}
    with pytest.raises(ValueError, match=r"^Validation failed for tool \"b\":\n  - x: must have required"):
        validate_tool_call(tools, call({}, name="b"))
    with pytest.raises(ValueError, match=r'^Tool "missing" not found$'):
        validate_tool_call(tools, call({}, name="missing"))


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0"), (-0.0, "0"), (1.0, "1"), (4.5, "4.5"), (0.1, "0.1"), (1e21, "1e+21"), (1e-7, "1e-7"),
     (0.000001, "0.000001"), (123456789012.5, "123456789012.5"), (-2.5e-10, "-2.5e-10"),
     (1.5e300, "1.5e+300"),
     (float("inf"), "Infinity"), (float("nan"), "NaN"), (7, "7")],
)  # fmt: skip
def test_numbers_print_like_javascript(value: float, text: str) -> None:
    assert js_number_to_string(value) == text
