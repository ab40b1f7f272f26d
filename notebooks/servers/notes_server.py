"""A small MCP server for the MCP tutorial (notebooks/08-mcp-servers.ipynb): a notebook of notes.

It is written with the official SDK's ``MCPServer`` and speaks stdio, so the tutorial starts it
with ``%pi mcp add notes -- python servers/notes_server.py``. Its tools:

* ``add_note(title, text)``: stores a note (changes state, so the tutorial keeps it behind
  approval);
* ``list_notes()``: the titles, as text and as structured content;
* ``search_notes(query)``: notes whose title or text contains ``query`` (case-insensitive);
* ``word_count(text)``: structured output (``{"words": n, "characters": n}``).

Notes live in memory for the server's life; nothing touches the disk or the network.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("notes")
NOTES: dict[str, str] = {"welcome": "Notes added by the agent appear here."}


class Titles(BaseModel):
    titles: list[str]


class Counts(BaseModel):
    words: int
    characters: int


@server.tool(description="Store a note under a title (replaces a note with the same title).")
def add_note(title: str, text: str) -> str:
    NOTES[title] = text
    return f"Saved note {title!r} ({len(text)} characters)."


@server.tool(description="List the titles of all notes.")
def list_notes() -> Titles:
    return Titles(titles=sorted(NOTES))


@server.tool(description="Find notes whose title or text contains the query (case-insensitive).")
def search_notes(query: str) -> str:
    found = [f"{t}: {x}" for t, x in sorted(NOTES.items()) if query.lower() in f"{t} {x}".lower()]
    return "\n".join(found) if found else f"No note mentions {query!r}."


@server.tool(description="Count the words and characters of a text.")
def word_count(text: str) -> Counts:
    return Counts(words=len(text.split()), characters=len(text))


if __name__ == "__main__":
    server.run("stdio")
