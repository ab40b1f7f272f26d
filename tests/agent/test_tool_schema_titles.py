"""Tool schemas sent to the model carry no ``title`` keys derived from names (Pi's have none,
and a small model copied them into its arguments), at any depth, for ``@tool`` functions and
for pydantic model ``parameters``; descriptions and explicit titles stay. Also the
``requires_approval`` flag of ``AgentTool`` and ``@tool``."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pi_notebook.agent import AgentTool, tool


class Colour(enum.Enum):
    """A colour."""

    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """A point on the plane."""

    x: int = Field(description="Horizontal position.")
    y: int
    colour: Colour = Colour.RED


class Shape(BaseModel):
    title: str  # a property called "title" is data, not a schema title: it must stay
    corners: list[Point] = []
    kind: Literal["polygon", "curve"] = "polygon"
    note: str = Field("", title="Explicit note title")


def titles(node: Any, path: str = "$") -> list[str]:
    """Every ``title`` key of a schema node (not the names inside ``properties``)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                found.append(f"{path}.title={value}")
            elif key in ("properties", "$defs"):
                for name, sub in value.items():
                    found += titles(sub, f"{path}.{key}.{name}")
            else:
                found += titles(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += titles(item, f"{path}[{i}]")
    return found


def _noop(*_: Any) -> str:
    return ""


def test_pydantic_model_parameters_have_no_derived_titles_at_any_depth() -> None:
    t = AgentTool(name="draw", description="Draw a shape.", parameters=Shape, execute=_noop)
    schema = t.to_tool().parameters
    assert titles(schema) == ["$.properties.note.title=Explicit note title"]
    assert "title" in schema["properties"]  # the property named "title" is kept
    point = schema["$defs"]["Point"]
    assert point["description"] == "A point on the plane."
    assert point["properties"]["x"] == {"description": "Horizontal position.", "type": "integer"}
    colour = {"description": "A colour.", "enum": ["red", "blue"], "type": "string"}
    assert schema["$defs"]["Colour"] == colour


def test_decorated_function_schema_has_no_titles_for_nested_models() -> None:
    @tool
    def place(shape: Shape, where: Point, label: Annotated[str, Field(description="Text.")] = "") -> str:
        """Place a shape.

        Args:
            where: The anchor.
        """
        return ""

    schema = place.to_tool().parameters
    assert titles(schema) == ["$.$defs.Shape.properties.note.title=Explicit note title"]
    assert schema["properties"]["where"] == {"$ref": "#/$defs/Point", "description": "The anchor."}
    assert schema["properties"]["label"] == {"default": "", "description": "Text.", "type": "string"}


def test_an_explicit_model_title_is_kept() -> None:
    class Titled(BaseModel):
        model_config = ConfigDict(title="Shown title")
        a: int

    t = AgentTool(name="t", description="d", parameters=Titled, execute=_noop)
    assert t.to_tool().parameters == {
        "title": "Shown title",
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }


def test_requires_approval_defaults_to_false_and_is_set_by_the_decorator() -> None:
    assert AgentTool(name="t", description="d", parameters={}, execute=_noop).requires_approval is False

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return path

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    assert delete_file.requires_approval is True
    assert read_file.requires_approval is False
    assert "requires_approval" not in delete_file.to_tool().model_dump()
