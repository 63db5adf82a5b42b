"""The reference framework's surface of :class:`~memorylab.Conversation`: its keywords (their
checks and defaults) and its methods (``get_str``, ``to_dict``, ``save_as_json`` ...), so that a
script written for ``swarms.structs.conversation.Conversation`` runs with only its import changed
(docs/migrating-from-swarms.md says what each keyword and method does here).

``Conversation`` derives from :class:`ReferenceMethods`; these methods are typed against
:class:`ConversationCore`, the part of the write-through log they use, so this module imports no
``Conversation`` (no import circle). The JSON/YAML save files are written here, through the
redactor and :func:`~memorylab.memory._fsutil.write_private_file`; MEMORY.md is the core's.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypedDict

from memorylab._validation import check_int
from memorylab.errors import InvalidSetting, PrerequisiteError, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory._fsutil import write_private_file
from memorylab.memory._records import EntryKind, entry_kind
from memorylab.memory._redact import redact_values

logger = logging.getLogger("memorylab")

DEFAULT_TOKENIZER_MODEL = "gpt-5.4"
"""The reference framework's default ``tokenizer_model_name`` (o200k_base, the gpt-4o family)."""

_METHODS = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}  # a save file's extension


class ReferenceKeywords(TypedDict, total=False):
    """The reference framework's keywords of ``Conversation(...)`` (pass them by keyword: its
    positional order differs). They mean here what they mean there, except the few marked as
    ignored:

    Args:
        id: An identifier (``self.id``); default 32 random hex digits.
        autosave: Save the history (:meth:`~ReferenceMethods.export`) after every ``add``.
        save_filepath: Where ``save_as_json`` / ``export`` write; default
            ``<conversations_dir>/conversation_<name>.json`` (``.yaml`` for YAML). A
            conversation given this, ``load_filepath`` or an explicit ``name`` resumes from that
            file at construction when it exists (in memory only: MEMORY.md is not rewritten);
            with ``preload=False`` a name alone reads nothing from disk (the replays of
            ``memorylab.analysis`` and the report read only the workspace they are given).
        load_filepath: A saved conversation (JSON or YAML) to resume from when it exists.
        conversations_dir: The folder of the default ``save_filepath`` (default
            ``./conversations``, created only when something is saved).
        export_method: ``"json"`` or ``"yaml"``; default: from ``save_filepath``'s extension,
            else JSON. A ``save_filepath`` whose extension disagrees is refused.
        context_length: The model's window, kept as ``self.context_length`` (default 8192).
            memorylab never cuts the history to it: compression keeps the history below it.
        token_count: Store each entry's token count in it (``entry["token_count"]``), as the
            reference does. (The count of the whole history is ``token_count()``; this flag is
            kept as ``self.token_count_on``.)
        message_id_on: Give each entry a ``message_id`` (a UUID4 string).
        tokenizer_model_name: The model whose tokenizer counts tokens when no
            ``token_counter`` is given (default the reference's ``"gpt-5.4"``: o200k_base).
        dynamic_context_window, cache_enabled, output_metadata, save_as_yaml_on,
            save_as_json_bool: Ignored (documented no-ops: docs/migrating-from-swarms.md says
            why). memorylab never drops context silently, it compresses it.
        channel: A comms channel (``messages()`` rows of ``agent_name``/``content``, and
            ``post(role, text)``): its messages seed the history (in memory only) and every
            later ``add`` of a non-``System`` message is posted to it.
    """

    id: str | None
    autosave: bool
    save_filepath: str | os.PathLike[str] | None
    load_filepath: str | os.PathLike[str] | None
    conversations_dir: str | os.PathLike[str] | None
    export_method: str | None
    context_length: int | None
    token_count: bool
    message_id_on: bool
    tokenizer_model_name: str
    dynamic_context_window: bool
    cache_enabled: bool
    output_metadata: bool
    save_as_yaml_on: bool
    save_as_json_bool: bool
    channel: Any


def check_keywords(keywords: Mapping[str, Any]) -> None:
    """A ``TypeError`` for a keyword that is not the reference's, as for any unknown keyword."""
    for key in keywords:
        if key not in ReferenceKeywords.__annotations__:
            raise TypeError(f"Conversation.__init__() got an unexpected keyword argument {key!r}")


class ConversationCore(Protocol):
    """What the reference's methods use of the write-through log (memory/conversation.py)."""

    name: str
    conversation_history: list[dict[str, Any]]
    redactor: Callable[[str], str] | None
    _lock: AbstractContextManager[Any]

    def add(self, role: str, content: Any, **fields: Any) -> dict[str, Any]: ...

    def return_history_as_string(self) -> str: ...

    def token_count(self, counter: Callable[[str], int] | None = None) -> int: ...


class ReferenceMethods(ConversationCore):
    """The reference framework's settings and methods of :class:`~memorylab.Conversation`."""

    def _take_keywords(self, keywords: ReferenceKeywords) -> Any:
        """Check and keep the reference's keywords (before the memory file is opened); returns
        the channel, attached last so that nothing added while constructing is posted."""
        self.id = keywords.get("id") or secrets.token_hex(16)
        model = keywords.get("tokenizer_model_name", DEFAULT_TOKENIZER_MODEL)
        if not isinstance(model, str) or not model.strip():
            raise InvalidSetting(
                f"tokenizer_model_name must be a model name such as 'gpt-4o', not {model!r}"
            )
        self.tokenizer_model_name = model
        context_length = keywords.get("context_length", 8192)
        if context_length is not None:
            context_length = check_int("context_length", context_length, 1)
        self.context_length = context_length
        self.autosave = _check_flag("autosave", keywords.get("autosave", False))
        self.token_count_on = _check_flag("token_count", keywords.get("token_count", False))
        self.message_id_on = _check_flag("message_id_on", keywords.get("message_id_on", False))
        self.dynamic_context_window = _check_flag(
            "dynamic_context_window", keywords.get("dynamic_context_window", True)
        )
        self.cache_enabled = _check_flag("cache_enabled", keywords.get("cache_enabled", False))
        self.output_metadata = keywords.get("output_metadata", False)
        self.save_as_yaml_on = keywords.get("save_as_yaml_on", False)
        self.save_as_json_bool = keywords.get("save_as_json_bool", False)
        folder = self.conversations_dir = keywords.get("conversations_dir")
        save_filepath = keywords.get("save_filepath")
        self.export_method = _export_method(keywords.get("export_method"), save_filepath)
        if save_filepath is None:
            extension = ".json" if self.export_method == "json" else ".yaml"
            where = Path(folder) if folder is not None else Path.cwd() / "conversations"
            save_filepath = where / f"conversation_{self.name}{extension}"
        self.save_filepath = os.fspath(save_filepath)
        load_filepath = keywords.get("load_filepath")
        self.load_filepath = os.fspath(load_filepath) if load_filepath is not None else None
        self.channel: Any = None
        return keywords.get("channel")

    def _resume(self, named: bool) -> None:
        """Like the reference: a conversation given a file or a name (``named``) resumes from
        its save file, ``load_filepath`` first."""
        resume = self.load_filepath
        if resume is None or not os.path.exists(resume):
            resume = self.save_filepath
        if named and resume is not None and os.path.isfile(resume):
            self.load(resume)

    def get_str(self) -> str:
        """:meth:`return_history_as_string` (the reference's name, its most used call)."""
        return self.return_history_as_string()

    def count_history_tokens(self) -> int:
        """:meth:`token_count` (the reference's name). Never capped at ``context_length``:
        memorylab reports the real size (``dynamic_context_window`` is ignored)."""
        return self.token_count()

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add chat-format messages (``{"role", "content", ...}``) in order, each by :meth:`add`;
        their other keys (``name``, ``tool_calls``, ``tool_call_id``) are kept as the entry's
        ``metadata``, as the reference keeps them. Returns the entries."""
        added = []
        for message in messages:
            role, content, extra = _message_parts(message, "add_messages")
            added.append(self.add(role, content, metadata=extra or None))
        return added

    def batch_add(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Add message dicts in order, their other keys kept in the entry. Each is stamped now and
        written through by :meth:`add` (the reference only extends the list: its batch never
        reaches MEMORY.md)."""
        for message in messages:
            role, content, extra = _message_parts(message, "batch_add")
            extra.pop("timestamp", None)
            extra.pop("kind", None)
            self.add(role, content, **extra)

    def add_multiple(self, roles: Sequence[str], contents: Sequence[Any]) -> list[dict[str, Any]]:
        """:meth:`add` of each ``(role, content)`` pair, in order; returns the entries."""
        roles, contents = list(roles), list(contents)
        if len(roles) != len(contents):
            raise InvalidSetting(
                f"got {len(roles)} roles and {len(contents)} contents: give one content per role"
            )
        return [self.add(role, content) for role, content in zip(roles, contents, strict=True)]

    add_multiple_messages = add_multiple  # the reference has both names

    def add_tool_output_to_agent(self, role: str, tool_output: Any) -> None:
        """:meth:`add` of a tool's output (a dict is stored as JSON, kept as a dict here)."""
        self.add(role, tool_output)

    def query(self, index: int | str) -> dict[str, Any] | None:
        """The entry at ``index`` (0 to ``len - 1``), or ``None`` outside that range (as the
        reference answers)."""
        position = history_index(index, "query")
        history = self.conversation_history
        return history[position] if 0 <= position < len(history) else None

    def search(self, keyword: str) -> list[dict[str, Any]]:
        """The entries whose content (as text: JSON for dicts) contains ``keyword``."""
        if not isinstance(keyword, str):
            raise InvalidSetting(f"search() takes the text to look for, not {keyword!r}")
        return [
            e for e in self.conversation_history if keyword in fmt.content_to_text(e["content"])
        ]

    def count_messages_by_role(self) -> dict[str, int]:
        """Entries per role (as written: ``"User"`` and ``"user"`` are two roles); ``system``,
        ``user``, ``assistant`` and ``function`` are always there, as in the reference."""
        counts = dict.fromkeys(("system", "user", "assistant", "function"), 0)
        for entry in self.conversation_history:
            role = str(entry["role"])
            counts[role] = counts.get(role, 0) + 1
        return counts

    def get_final_message(self) -> str:
        """The last entry as ``"Role: content"`` (``""`` when the history is empty)."""
        history = self.conversation_history
        return fmt.history_line(history[-1]["role"], history[-1]["content"]) if history else ""

    def display_conversation(self, detailed: bool = False) -> None:
        """Print the history, one ``Role: content`` line per entry (``detailed``: each line
        starts with the entry's timestamp)."""
        for entry in self.conversation_history:
            stamp = entry.get("timestamp") if detailed else None
            print(fmt.history_line(entry["role"], entry["content"], stamp))

    get_last_message_as_string = get_final_message  # the reference has both names

    def get_final_message_content(self) -> Any:
        """The content of the last entry, as it was added (``""`` when the history is empty)."""
        history = self.conversation_history
        return history[-1]["content"] if history else ""

    def _index_after_first_message(self) -> int:
        """Where the output starts: after the context (static context, preload, summary; or a
        ``System`` first entry added by hand) and after the first message, the input."""
        history = self.conversation_history
        start = 0
        while start < len(history) and entry_kind(history[start]) is not EntryKind.MESSAGE:
            start += 1
        if start == 0 and history and history[0].get("role") == "System":
            start = 1
        return start + 1

    def return_all_except_first(self) -> list[dict[str, Any]]:
        """The entries after the context and the first input (what the agents answered)."""
        return self.conversation_history[self._index_after_first_message() :]

    def return_all_except_first_string(self) -> str:
        """The contents of :meth:`return_all_except_first`, one per line."""
        return "\n".join(fmt.content_to_text(e["content"]) for e in self.return_all_except_first())

    def return_messages_as_list(self) -> list[dict[str, Any]]:
        """One ``{"role", "content"}`` dict per entry (content as it was added)."""
        return [{"role": e["role"], "content": e["content"]} for e in self.conversation_history]

    return_messages_as_dictionary = return_messages_as_list  # the reference has both names

    def return_messages_as_strings(self) -> list[str]:
        """One ``"Role: content"`` string per entry (no timestamps)."""
        return [fmt.history_line(e["role"], e["content"]) for e in self.conversation_history]

    def to_dict(self) -> list[dict[str, Any]]:
        """The history: a list of copies of the entries (the reference returns the list)."""
        return [dict(e) for e in self.conversation_history]

    to_list = to_dict

    def to_json(self) -> str:
        """The history as JSON (objects that are not JSON as ``str()``)."""
        return json.dumps(self.conversation_history, default=str)

    def return_json(self) -> str:
        """:meth:`return_messages_as_dictionary` as indented JSON."""
        return json.dumps(self.return_messages_as_dictionary(), indent=4, default=str)

    def to_yaml(self) -> str:
        """The history as YAML (what :meth:`to_json` holds, readable by ``yaml.safe_load``)."""
        yaml = _yaml()
        return str(yaml.safe_dump(json.loads(self.to_json()), sort_keys=False, allow_unicode=True))

    # -- save files (the reference's JSON/YAML persistence, beside MEMORY.md) -------------------

    def save_as_json(self, force: bool | str | os.PathLike[str] = True) -> None:
        """Write the history to ``save_filepath`` as JSON (through the redactor, like
        everything memorylab writes; 0o600, atomically). With ``force=False`` nothing is saved
        unless ``autosave`` is on (the reference's rule). A path given in place of ``force``
        (the reference's own tests pass one) is where to write. A ``save_filepath`` ending in
        ``.yaml`` is written with the extension ``.json``, as :meth:`save_as_yaml` does."""
        self._save(force, "json")

    def save_as_yaml(self, force: bool | str | os.PathLike[str] = True) -> None:
        """:meth:`save_as_json` in YAML, to ``save_filepath`` with the extension ``.yaml``
        (``conversation_<name>.yaml`` when ``save_filepath`` is the default ``.json``): a save
        file's extension says its format, so that :meth:`load` reads it back. (swarms 16.0.3
        writes the YAML into the ``.json`` path, which its own ``load`` then cannot read.) A
        path given in place of ``force`` must end in ``.yaml`` or ``.yml``."""
        self._save(force, "yaml")

    def export(self, force: bool | str | os.PathLike[str] = True) -> None:
        """:meth:`save_as_json` or :meth:`save_as_yaml`, as ``export_method`` says."""
        self._save(force, self.export_method)

    def _save(self, force: bool | str | os.PathLike[str], method: str) -> None:
        target = _save_path(self.save_filepath, method)
        if isinstance(force, str | os.PathLike):
            target, force = _given_save_path(force, method), True
        if not force and not self.autosave:
            logger.warning(
                "memorylab: not saved: autosave is off; call save_as_%s(force=True) to save", method
            )
            return
        assert target is not None
        history: Any = [dict(e) for e in self.conversation_history]
        if self.redactor is not None:
            history = redact_values(history, self.redactor)
        text = json.dumps(history, indent=4, default=str, ensure_ascii=False)
        if method == "yaml":
            text = _yaml().safe_dump(
                json.loads(text), sort_keys=False, allow_unicode=True, indent=4
            )
        write_private_file(Path(target), text.encode("utf-8"))
        logger.info("memorylab: conversation saved to %s", target)

    def load_from_json(self, filename: str | os.PathLike[str]) -> None:
        """Replace the history with a saved one (a list of entries, or the reference's
        ``{"conversation_history": [...]}``). In memory only: MEMORY.md is not rewritten."""
        self._load(Path(filename), "json")

    def load_from_yaml(self, filename: str | os.PathLike[str]) -> None:
        """:meth:`load_from_json` for a YAML file."""
        self._load(Path(filename), "yaml")

    def _load(self, path: Path, method: str) -> None:
        restored = read_save_file(path, method)
        with self._lock:
            self.conversation_history = restored

    def load(self, filename: str | os.PathLike[str]) -> None:
        """:meth:`load_from_json` or :meth:`load_from_yaml`, by the file's extension."""
        method = _METHODS.get(Path(filename).suffix.lower())
        if method is None:
            raise InvalidSetting(
                f"cannot load {filename}: the extension must be .json, .yaml or .yml"
            )
        self._load(Path(filename), method)


def read_save_file(path: Path, method: str | None = None) -> list[dict[str, Any]]:
    """The history a save file holds (``save_as_json``, ``save_as_yaml``, ``export``; a list
    of entries, or the reference's ``{"conversation_history": [...]}``), each entry with a
    ``content`` and a ``timestamp`` (``""``: saved without one). ``method``: ``"json"`` or
    ``"yaml"``; ``None``: JSON when the text opens with ``[`` or ``{``, else YAML."""
    text = _read_text(path)
    if method is None:
        method = "json" if text.lstrip()[:1] in ("[", "{") else "yaml"
    if method == "json":
        parse, malformed = json.loads, json.JSONDecodeError
    else:
        yaml = _yaml()
        parse, malformed = yaml.safe_load, yaml.YAMLError
    try:
        data = parse(text)
    except malformed as exc:
        raise InvalidSetting(
            f"{path} is not {method.upper()} ({str(exc).splitlines()[0]}); give a file "
            f"written by save_as_{method}() or export()"
        ) from None
    if isinstance(data, Mapping):
        data = data.get("conversation_history", [])
    if not isinstance(data, list):
        raise InvalidSetting(
            f"{path} holds no conversation: expected a list of messages, got {type(data).__name__}"
        )
    restored: list[dict[str, Any]] = []
    for number, item in enumerate(data):
        if not isinstance(item, Mapping) or "role" not in item:
            raise InvalidSetting(
                f"{path}: entry {number} is not a message (a dict with 'role' and 'content')"
            )
        entry = dict(item)
        entry.setdefault("content", None)
        entry.setdefault("timestamp", "")  # a message saved without time reads without one
        restored.append(entry)
    return restored


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidSetting(f"{name} must be True or False, not {value!r}")
    return value


def history_index(index: object, method: str) -> int:
    """``index`` as an int (``"3"`` too, as the reference takes it), or the error that says so."""
    try:
        if isinstance(index, str):
            return int(index)
        if isinstance(index, int) and not isinstance(index, bool):
            return index
    except ValueError:
        pass
    raise InvalidSetting(
        f"{method}(index={index!r}): the index must be an int, a position in conversation_history"
    )


def _export_method(method: str | None, save_filepath: str | os.PathLike[str] | None) -> str:
    """``export_method``, or the one ``save_filepath``'s extension names (JSON otherwise)."""
    suffix = Path(save_filepath).suffix.lower() if save_filepath is not None else ""
    implied = _METHODS.get(suffix)
    if method is None:
        return implied or "json"
    if method not in _METHODS.values():
        raise InvalidSetting(f"export_method must be 'json' or 'yaml', not {method!r}")
    if implied is not None and implied != method:
        raise InvalidSetting(
            f"save_filepath {os.fspath(save_filepath)!r} does not match export_method="  # type: ignore[arg-type]
            f"{method!r}: give a .{method} path, or leave export_method out"
        )
    return method


def _save_path(save_filepath: str | None, method: str) -> str | None:
    """Where ``save_as_<method>`` writes: ``save_filepath``, its extension made ``method``'s
    when it names the other format (``.json`` for YAML, ``.yaml``/``.yml`` for JSON)."""
    if save_filepath is None:
        return None
    path = Path(save_filepath)
    named = _METHODS.get(path.suffix.lower())
    if named is None or named == method:
        return save_filepath
    return os.fspath(path.with_suffix(f".{method}"))


def _given_save_path(path: str | os.PathLike[str], method: str) -> str:
    """A path given to ``save_as_<method>``: refused when its extension names the other format
    (a file :meth:`ReferenceMethods.load` could not read back)."""
    named = _METHODS.get(Path(path).suffix.lower())
    if named is not None and named != method:
        raise InvalidSetting(
            f"save_as_{method}({os.fspath(path)!r}): the extension says {named.upper()}; give a "
            f"{'.yaml' if method == 'yaml' else '.json'} path"
        )
    return os.fspath(path)


def _message_parts(message: object, method: str) -> tuple[str, Any, dict[str, Any]]:
    """``(role, content, other keys)`` of a message dict, or a clear error."""
    if not isinstance(message, Mapping) or "role" not in message:
        raise InvalidSetting(
            f"{method}() takes dicts with 'role' and 'content', not {message!r}"[:300]
        )
    extra = {k: v for k, v in message.items() if k not in ("role", "content")}
    return str(message["role"]), message.get("content"), extra


def _yaml() -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise PrerequisiteError("YAML needs PyYAML: pip install pyyaml") from None
    return yaml


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(
            f"{path} does not exist: give the path of a conversation saved with save_as_json() "
            "or export()"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
