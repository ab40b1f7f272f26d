"""Tool-argument validation (Pi's ``utils/validation.ts``).

A tool's ``parameters`` is either a pydantic model class (validated by pydantic in lax mode;
the model instance is returned) or a JSON-schema dict. For dicts this module reproduces what
Pi does with TypeBox and AJV-style coercion, without generating code:

* a plain dict is a schema "from JSON" (MCP, hand-written, serialized): Pi's lenient
  primitive coercion applies (``"42"`` -> 42 for a number, ``null`` -> ``""`` for a string,
  union types try each member, ``anyOf``/``oneOf`` take the first member that validates);
* a :class:`TypeBoxSchema` is a schema Pi would have built with TypeBox: TypeBox's
  ``Value.Convert`` rules apply instead (``"1"`` -> ``True`` for a boolean, ``4.5`` -> 4 for
  an integer, ...). In TypeScript a hidden symbol marks such schemas; here the dict subclass
  does, and it serializes as a plain dict.

Then the converted copy is validated against the JSON-schema vocabulary tools use and every
error is reported with TypeBox's English message, in Pi's exact format. The caller's
arguments are never mutated.
"""

from __future__ import annotations

import copy
import json
import math
import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from .text import JS_WHITESPACE

_MAX_SAFE = 2**53


class TypeBoxSchema(dict[str, Any]):
    """A JSON schema that gets TypeBox's ``Value.Convert`` conversions instead of the
    plain-schema coercion (Pi tells the two apart by TypeBox's hidden kind symbol)."""


# --- JavaScript value semantics ---------------------------------------------------------------


def _is_number(value: Any) -> TypeGuard[float]:
    # NaN is "not a number" for every check here, as in TypeBox.
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _is_integer(value: Any) -> bool:
    return _is_number(value) and (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))


def _as_number(value: float) -> int | float:
    """JSON has one number type; give integral values back as ``int`` like ``json.loads``."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE:
        return int(value)
    return value


_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def _js_to_number(text: str) -> float | None:
    """``Number(text)`` for a string; ``None`` where JavaScript gives ``NaN``."""
    body = text.strip(JS_WHITESPACE)
    if not body:
        return 0
    if _JS_DECIMAL.fullmatch(body):
        return float(body)
    if _JS_RADIX.fullmatch(body):
        return int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1].lower()])
    if body.lstrip("+-") == "Infinity" and len(body) - len(body.lstrip("+-")) <= 1:
        return -math.inf if body[0] == "-" else math.inf
    return None


def js_number_to_string(value: float) -> str:
    """``String(number)``: integral values without ``.0``, exponents as JavaScript writes them."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign, text = ("-", repr(-value)) if value < 0 else ("", repr(value))
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + int(exp or 0) - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")
    size = len(digits)
    if size <= point <= 21:
        out = digits + "0" * (point - size)
    elif 0 < point <= 21:
        out = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        out = "0." + "0" * -point + digits
    else:
        rest = f".{digits[1:]}" if size > 1 else ""
        out = f"{digits[0]}{rest}e{'+' if point - 1 >= 0 else '-'}{abs(point - 1)}"
    return sign + out


def _js_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return js_number_to_string(value)


def _js_equal(a: Any, b: Any) -> bool:
    """Deep equality as JSON values (``True`` is not ``1``, ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_js_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_js_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _clone(value: Any) -> Any:
    """``structuredClone`` for JSON data (fast path), ``deepcopy`` for anything else."""
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return copy.deepcopy(value)


# --- TypeBox Value.Convert (TypeBoxSchema only) ------------------------------------------------


def _try_convert(value: Any, kind: str) -> Any:
    """TypeBox's ``Try*`` conversions; returns ``value`` itself when none applies."""
    if kind == "string":
        if value is None:
            return "null"
        return _js_string(value) if isinstance(value, bool) or _is_number(value) else value
    if kind in ("number", "integer"):
        number: Any = value
        if isinstance(value, bool):
            number = int(value)
        elif value is None:
            number = 0
        elif isinstance(value, str):
            parsed = _js_to_number(value)
            lowered = value.lower()
            number = parsed if parsed is not None else {"false": 0, "true": 1}.get(lowered, value)
        if kind == "integer" and _is_number(number) and not _is_integer(number) and math.isfinite(number):
            number = math.trunc(number)
        return _as_number(number) if _is_number(number) else value
    if kind == "boolean":
        if value is None:
            return False
        if isinstance(value, str):
            return {"false": False, "true": True, "0": False, "1": True}.get(
                value if value in ("0", "1") else value.lower(), value
            )
        return value == 1 if _is_number(value) and value in (0, 1) else value
    if kind == "null":
        matches = value is False or (_is_number(value) and value == 0)
        matches = matches or (
            isinstance(value, str) and (value.lower() in ("undefined", "null") or value in ("", "0"))
        )
        return None if matches else value
    return value


def _typebox_convert(schema: Any, value: Any, root: Any) -> Any:
    if not isinstance(schema, Mapping):
        return value
    if isinstance(schema.get("anyOf"), list):
        members = schema["anyOf"]
        if any(_is_valid(member, value, root) for member in members):
            return value
        for member in members:
            candidate = _typebox_convert(member, _clone(value), root)
            if _is_valid(schema, candidate, root):
                return candidate
        return value
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        properties = _map(schema, "properties")
        for key, sub in properties.items():
            if key in value:
                value[key] = _typebox_convert(sub, value[key], root)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key in [k for k in value if k not in properties]:
                value[key] = _typebox_convert(extra, value[key], root)
        return value
    if kind == "array" and isinstance(value, list):
        for index, sub in _item_schemas(schema.get("items"), len(value)):
            value[index] = _typebox_convert(sub, value[index], root)
        return value
    if kind == "integer":
        return value if _is_integer(value) else _try_convert(value, "integer")
    if kind in ("string", "number", "boolean", "null"):
        return value if _matches_type(value, kind) else _try_convert(value, kind)
    return value


# --- Pi's coerceWithJsonSchema (plain JSON schemas) ---------------------------------------------


def _list(schema: Mapping[str, Any], keyword: str) -> list[Any]:
    value = schema.get(keyword)
    return value if isinstance(value, list) else []


def _map(schema: Mapping[str, Any], keyword: str) -> Mapping[str, Any]:
    value = schema.get(keyword)
    return value if isinstance(value, Mapping) else {}


def _item_schemas(items: Any, size: int) -> list[tuple[int, Any]]:
    """(index, schema) for each array element ``items`` constrains (single or tuple form)."""
    if isinstance(items, list):
        return list(enumerate(items[:size]))
    return [(index, items) for index in range(size)] if isinstance(items, Mapping) else []


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []


def _coerce_primitive(value: Any, kind: str) -> Any:
    """Pi's ``coercePrimitiveByType``; returns ``value`` itself when nothing converts."""
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, str) and value.strip(JS_WHITESPACE):
            parsed = _js_to_number(value)
            if parsed is not None and math.isfinite(parsed) and (kind == "number" or _is_integer(parsed)):
                return _as_number(parsed)
        return value
    if kind == "boolean":
        if value is None:
            return False
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if _is_number(value) and value in (0, 1):
            return value == 1
        return value
    if kind == "string":
        if value is None:
            return ""
        return _js_string(value) if isinstance(value, bool) or _is_number(value) else value
    if kind == "null" and (value == "" or value is False or (_is_number(value) and value == 0)):
        return None
    return value


def _coerce_union(value: Any, members: Sequence[Any], root: Any) -> Any:
    for member in members:
        candidate = coerce_with_json_schema(_clone(value), member, root)
        if _is_valid(member, candidate, root):
            return candidate
    return value


def coerce_with_json_schema(value: Any, schema: Any, root: Any = None) -> Any:
    """Pi's AJV-style coercion of ``value`` for a plain JSON schema (containers in place)."""
    if not isinstance(schema, Mapping):
        return value
    root = schema if root is None else root
    result = value
    for nested in _list(schema, "allOf"):
        result = coerce_with_json_schema(result, nested, root)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            result = _coerce_union(result, _list(schema, keyword), root)
    kinds = _schema_types(schema)
    in_union = len(kinds) > 1 and any(_matches_type(result, kind) for kind in kinds)
    if kinds and not in_union:
        for kind in kinds:
            candidate = _coerce_primitive(result, kind)
            if candidate is not result:
                result = candidate
                break
    if "object" in kinds and isinstance(result, dict):
        properties = _map(schema, "properties")
        for key, sub in properties.items():
            if key in result:
                result[key] = coerce_with_json_schema(result[key], sub, root)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key in [k for k in result if k not in properties]:
                result[key] = coerce_with_json_schema(result[key], extra, root)
    if "array" in kinds and isinstance(result, list):
        for index, sub in _item_schemas(schema.get("items"), len(result)):
            result[index] = coerce_with_json_schema(result[index], sub, root)
    return result


# --- validation: TypeBox's keyword order and messages --------------------------------------------

# (path, message); the path is the instance path with "." separators, "" for the root.
Errors = list[tuple[str, str]]


def _child(path: str, key: str) -> str:
    # TypeBox encodes keys as JSON-pointer fragments; Pi then turns "/" into ".".
    key = key.replace("~", "~0").replace("/", "~1")
    return f"{path}.{key}" if path else key


def _matches_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return _is_integer(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    return True  # unknown type names constrain nothing, as in TypeBox


def _resolve_ref(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return True
    node = root
    for raw in [p for p in ref[1:].split("/") if p]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return True  # unresolvable: no constraint
    return node


def _is_valid(schema: Any, value: Any, root: Any) -> bool:
    return _check(schema, value, "", root, [])


def _check(schema: Any, value: Any, path: str, root: Any, errors: Errors) -> bool:
    """Validate ``value``, appending ``(path, message)`` for every failure (all of them)."""
    if schema is False:
        errors.append((path, "schema is false"))
        return False
    if not isinstance(schema, Mapping):
        return True
    count = len(errors)
    kinds = _schema_types(schema)
    if kinds and not any(_matches_type(value, kind) for kind in kinds):
        kind = schema["type"]
        message = f"must be {kind}" if isinstance(kind, str) else f"must be either {' or '.join(kinds)}"
        errors.append((path, message))
    if isinstance(value, dict):
        _check_object(schema, value, path, root, errors)
    elif isinstance(value, list | tuple):
        _check_array(schema, value, path, root, errors)
    elif isinstance(value, str):
        _check_string(schema, value, path, errors)
    elif _is_number(value):
        _check_number(schema, value, path, errors)
    if isinstance(schema.get("$ref"), str):
        _check(_resolve_ref(root, schema["$ref"]), value, path, root, errors)
    if "const" in schema and not _js_equal(value, schema["const"]):
        errors.append((path, "must be equal to constant"))
    if isinstance(schema.get("enum"), list) and not any(_js_equal(value, e) for e in schema["enum"]):
        errors.append((path, "must be equal to one of the allowed values"))
    if "not" in schema and _is_valid(schema["not"], value, root):
        errors.append((path, "must not be valid"))
    for sub in _list(schema, "allOf"):
        _check(sub, value, path, root, errors)
    _check_union(schema, value, path, root, errors)
    return len(errors) == count


def _check_union(schema: Mapping[str, Any], value: Any, path: str, root: Any, errors: Errors) -> None:
    for keyword, message in (
        ("anyOf", "must match a schema in anyOf"),
        ("oneOf", "must match exactly one schema in oneOf"),
    ):
        members = schema.get(keyword)
        if not isinstance(members, list):
            continue
        failed: Errors = []
        passed = sum(_check(member, value, path, root, failed) for member in members)
        if (passed >= 1) if keyword == "anyOf" else (passed == 1):
            continue
        if passed == 0:  # a member's own errors only help when no member matched
            errors.extend(failed)
        errors.append((path, message))


def _check_object(
    schema: Mapping[str, Any], value: dict[str, Any], path: str, root: Any, errors: Errors
) -> None:
    properties, patterns = _map(schema, "properties"), _map(schema, "patternProperties")
    required = schema.get("required")
    missing = [key for key in required if key not in value] if isinstance(required, list) else []
    if missing:
        # Pi names the first missing property in the path, unencoded.
        where = f"{path}.{missing[0]}" if path else missing[0]
        errors.append((where, f"must have required properties {', '.join(missing)}"))
    extra_schema = schema.get("additionalProperties", True)
    if extra_schema is not True:
        extra = [k for k in value if k not in properties and not any(_search(p, k) for p in patterns)]
        if any(not _is_valid(extra_schema, value[k], root) for k in extra):
            errors.append((path, "must not have additional properties"))
    for pattern, sub in patterns.items():
        for key in [k for k in value if _search(pattern, k)]:
            _check(sub, value[key], _child(path, key), root, errors)
    for key, sub in properties.items():
        if key in value:
            _check(sub, value[key], _child(path, key), root, errors)
    _check_bounds(schema, len(value), _OBJECT_BOUNDS, path, errors)


def _check_array(
    schema: Mapping[str, Any], value: Sequence[Any], path: str, root: Any, errors: Errors
) -> None:
    if "contains" in schema and not any(_is_valid(schema["contains"], item, root) for item in value):
        errors.append((path, "must contain at least 1 valid item"))
    items, prefix = schema.get("items"), _list(schema, "prefixItems")
    pairs = _item_schemas(items, len(value))
    if items is False or items is True:
        pairs = [(index, items) for index in range(len(value))]
    for index, sub in pairs:
        if index >= len(prefix) or isinstance(items, list):  # "items" after "prefixItems"
            _check(sub, value[index], _child(path, str(index)), root, errors)
    _check_bounds(schema, len(value), _ARRAY_BOUNDS, path, errors)
    for index, sub in enumerate(prefix[: len(value)]):
        _check(sub, value[index], _child(path, str(index)), root, errors)
    unique = schema.get("uniqueItems") is True
    if unique and any(_js_equal(value[i], value[j]) for i in range(len(value)) for j in range(i)):
        errors.append((path, "must not have duplicate items"))


def _check_string(schema: Mapping[str, Any], value: str, path: str, errors: Errors) -> None:
    _check_bounds(schema, len(value), _STRING_BOUNDS, path, errors)
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not _search(pattern, value):
        errors.append((path, f'must match pattern "{pattern}"'))


# (keyword, fails(measured, limit), message) in TypeBox's order.
Bounds = tuple[tuple[str, Any, str], ...]
_OBJECT_BOUNDS: Bounds = (
    ("minProperties", operator.lt, "must not have fewer than {} properties"),
    ("maxProperties", operator.gt, "must not have more than {} properties"),
)
_ARRAY_BOUNDS: Bounds = (
    ("maxItems", operator.gt, "must not have more than {} items"),
    ("minItems", operator.lt, "must not have fewer than {} items"),
)
_STRING_BOUNDS: Bounds = (
    ("maxLength", operator.gt, "must not have more than {} characters"),
    ("minLength", operator.lt, "must not have fewer than {} characters"),
)
_NUMBER_BOUNDS: Bounds = (
    ("exclusiveMaximum", operator.ge, "must be < {}"),
    ("exclusiveMinimum", operator.le, "must be > {}"),
    ("maximum", operator.gt, "must be <= {}"),
    ("minimum", operator.lt, "must be >= {}"),
)


def _check_bounds(
    schema: Mapping[str, Any], measured: float, bounds: Bounds, path: str, errors: Errors
) -> None:
    for keyword, fails, message in bounds:
        limit = schema.get(keyword)
        if _is_number(limit) and fails(measured, limit):
            errors.append((path, message.format(js_number_to_string(limit))))


def _check_number(schema: Mapping[str, Any], value: float, path: str, errors: Errors) -> None:
    _check_bounds(schema, value, _NUMBER_BOUNDS, path, errors)
    step = schema.get("multipleOf")
    if _is_number(step) and step > 0:
        quotient = value / step
        if not (math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9):
            errors.append((path, f"must be multiple of {js_number_to_string(step)}"))


def _search(pattern: str, text: str) -> bool:
    # re caches compiled patterns; JSON-schema patterns are unanchored searches.
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


# --- public API ---------------------------------------------------------------------------------


def _js_json(value: Any) -> Any:
    """What ``JSON.stringify`` would print: integral floats without ``.0``, NaN/inf as null."""
    if isinstance(value, Mapping):
        return {str(k): _js_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_json(v) for v in value]
    if isinstance(value, float):
        return None if not math.isfinite(value) else _as_number(value)
    return value


def _failure(tool_name: str, lines: list[str], original: Any) -> ValueError:
    received = json.dumps(_js_json(original), indent=2, ensure_ascii=False, default=str)
    body = "\n".join(lines) or "Unknown validation error"
    return ValueError(f'Validation failed for tool "{tool_name}":\n{body}\n\nReceived arguments:\n{received}')


def _validate_pydantic(model_cls: Any, name: str, original: Any) -> Any:
    from pydantic import ValidationError

    try:
        return model_cls.model_validate(_clone(original))
    except ValidationError as exc:
        lines = [f"  - {'.'.join(str(p) for p in e['loc']) or 'root'}: {e['msg']}" for e in exc.errors()]
        raise _failure(name, lines, original) from None


def _is_model_class(parameters: Any) -> bool:
    return isinstance(parameters, type) and hasattr(parameters, "model_validate")


def validate_tool_arguments(tool: Any, tool_call: Any) -> Any:
    """Validate (and leniently convert) ``tool_call.arguments`` for ``tool.parameters``.

    Returns the converted copy of the arguments, or the pydantic model instance when the
    parameters are a model class. Raises ``ValueError`` with Pi's exact message otherwise.
    """
    schema, name, original = tool.parameters, tool_call.name, tool_call.arguments
    if _is_model_class(schema):
        return _validate_pydantic(schema, name, original)
    args = _clone(original)
    if not isinstance(schema, Mapping):
        return args
    if isinstance(schema, TypeBoxSchema):
        _typebox_convert(schema, args, schema)  # like Pi, a replaced root value is dropped
    else:
        coerced = coerce_with_json_schema(args, schema)
        if coerced is not args:
            if isinstance(args, dict) and isinstance(coerced, dict):
                args.clear()
                args.update(coerced)
            else:
                return coerced if _is_valid(schema, coerced, schema) else args
    errors: Errors = []
    if _check(schema, args, "", schema, errors):
        return args
    lines = [f"  - {path or 'root'}: {message}" for path, message in errors]
    raise _failure(name, lines, original)


def validate_tool_call(tools: Sequence[Any], tool_call: Any) -> Any:
    """Find the tool named by ``tool_call`` and validate its arguments."""
    for tool in tools:
        if tool.name == tool_call.name:
            return validate_tool_arguments(tool, tool_call)
    raise ValueError(f'Tool "{tool_call.name}" not found')
