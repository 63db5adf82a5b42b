"""Plain Python callables as LLM tools: a JSON schema from the signature and docstring, and
safe execution of the model's tool calls.

The description is the docstring's first paragraph; parameter descriptions come from a
Google-style ``Args:`` section. Annotations map to JSON types (``str`` string, ``int`` integer,
``float`` number, ``bool`` boolean, ``list``/``tuple`` array, ``dict`` object; ``X | None`` is X
and optional). Parameters with a default are not required.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorylab._validation import check_int
from memorylab.compress._compressor import AgentLike
from memorylab.errors import InvalidSetting
from memorylab.memory._recall import HasMemoryFile, format_recalled
from memorylab.memory._recall import recall as recall_messages

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}
_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def _json_type(annotation: Any) -> tuple[dict[str, Any], bool]:
    """(schema, optional) for an annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}, False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        if len(members) == 1:
            return _json_type(members[0])[0], optional
        return {"anyOf": [_json_type(m)[0] for m in members]}, optional
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {"enum": values}, False
    base = origin or annotation
    schema: dict[str, Any] = {"type": _JSON_TYPES[base]} if base in _JSON_TYPES else {}
    if base in (list, tuple) and typing.get_args(annotation):
        schema["items"] = _json_type(typing.get_args(annotation)[0])[0]
    return schema, False


def _docstring_parts(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(func) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    params: dict[str, str] = {}
    in_args = False
    for line in (inspect.getdoc(func) or "").splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            match = _ARG_LINE.match("  " + line if not line.startswith("  ") else line)
            if match:
                params[match[1]] = match[2].strip()
            elif line and not line.startswith(" "):
                in_args = False
    return description, params


@dataclass(frozen=True)
class Tool:
    """A callable offered to the model, with its OpenAI-style function schema."""

    name: str
    function: Callable[..., Any]
    description: str
    parameters: Mapping[str, Any]

    @classmethod
    def from_function(cls, func: Callable[..., Any], name: str | None = None) -> Tool:
        if not callable(func):
            raise InvalidSetting(f"a tool must be callable, got {type(func).__name__}")
        tool_name = str(name or getattr(func, "__name__", ""))
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise InvalidSetting(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'; pass "
                "a function with such a __name__"
            )
        description, documented = _docstring_parts(func)
        try:
            hints = typing.get_type_hints(func)
        except Exception:  # unresolvable annotations: fall back to the raw ones
            hints = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        for parameter in inspect.signature(func).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            schema, optional = _json_type(hints.get(parameter.name, parameter.annotation))
            if parameter.name in documented:
                schema = {**schema, "description": documented[parameter.name]}
            properties[parameter.name] = schema
            if parameter.default is inspect.Parameter.empty and not optional:
                required.append(parameter.name)
        parameters = {"type": "object", "properties": properties, "required": required}
        return cls(tool_name, func, description or tool_name, parameters)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    def call(self, arguments: str | Mapping[str, Any] | None) -> str:
        """Run the tool; any failure becomes an error text for the model, never an exception."""
        try:
            if isinstance(arguments, str):
                parsed = json.loads(arguments) if arguments.strip() else {}
            else:
                parsed = dict(arguments or {})
            if not isinstance(parsed, dict):
                raise TypeError("tool arguments must be a JSON object")
            result = self.function(**parsed)
        except Exception as error:  # the model gets the error and may try again
            return f"Error: {self.name} failed: {type(error).__name__}: {error}"
        if isinstance(result, str):
            return result
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(result)


def as_tools(
    tools: Sequence[Callable[..., Any] | Tool] | None, *, memory: HasMemoryFile | None = None
) -> dict[str, Tool]:
    """Tools by name; duplicate names are an error. With ``memory`` (an ``Agent``'s
    ``Conversation``), a :func:`recall_tool` made without a source or an agent recalls from
    it: an agent's tool searches its own archives."""
    out: dict[str, Tool] = {}
    for item in tools or ():
        tool = item if isinstance(item, Tool) else Tool.from_function(item)
        if tool.name in out:
            raise InvalidSetting(f"two tools are named {tool.name!r}; names must be unique")
        unbound_k = getattr(tool.function, _UNBOUND_RECALL, None)
        if memory is not None and unbound_k is not None:
            tool = dataclasses.replace(tool, function=recall_tool(memory, k=unbound_k))
        out[tool.name] = tool
    return out


_UNBOUND_RECALL = "__memorylab_unbound_recall_k__"
"""The attribute that marks a :func:`recall_tool` made without a source or an agent (its
``k``): :func:`as_tools` binds it to the memory of the ``Agent`` it is given to."""


def recall_tool(
    source: HasMemoryFile | AgentLike | str | os.PathLike[str] | None = None,
    *,
    agent: str | None = None,
    k: int = 5,
) -> Callable[[str], str]:
    """A ``recall(query)`` tool: the agent searches its own archives (what its compactions took
    out of the context) and gets the best ``k`` messages back with their timestamps and the
    archives that hold them (:func:`memorylab.memory._recall.recall`).

    Given to an ``Agent`` with neither ``source`` nor ``agent``, the tool searches that
    agent's archives and no other's: ``Agent(agent_name="Researcher", tools=[recall_tool()])``.
    Other memory is searched only when named: ``source`` is what
    :func:`~memorylab.memory._recall.recall` takes (a workspace, whose every agent is then
    searched, an agent folder, a MEMORY.md, a ``Conversation``) or an ``Agent`` (its
    ``short_memory``); ``agent`` names the agent in a workspace (the default one without a
    ``source``). Nothing is read until the model calls the tool, so an ``Agent`` can be given
    the tool of a name before it exists::

        Agent(agent_name="Researcher", tools=[recall_tool(agent="Researcher")], ...)

    A tool that names nothing and was given to no ``Agent`` answers its calls with an
    ``InvalidSetting`` that says what to name.
    """
    k = check_int("k", k, 1)
    held = source.short_memory if isinstance(source, AgentLike) else source  # an Agent: its memory
    unbound = held is None and agent is None

    def recall(query: str) -> str:
        """Search your archived messages: what earlier compactions summarized away, word for
        word. Returns the best matches, most relevant first, each with its timestamp, role and
        the archive that holds it.

        Args:
            query: the words to look for: a name, a path, a number, a command or a question
        """
        if unbound:
            raise InvalidSetting(
                "recall_tool() names no memory to search: give it to an Agent "
                "(Agent(..., tools=[recall_tool()]) searches that agent's own archives), or "
                "name the memory: recall_tool(conversation), recall_tool(agent='Name') for an "
                "agent of the workspace, recall_tool(workspace_folder) for all of its agents"
            )
        found = recall_messages(held, query, agent=agent, k=k)
        if not found:
            return f"No archived message matches {query!r}."
        return format_recalled(found)

    if unbound:
        setattr(recall, _UNBOUND_RECALL, k)
    return recall


__all__ = ["Tool", "as_tools", "recall_tool"]
