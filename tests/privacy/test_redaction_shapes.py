"""Secrets off disk in every shape a message takes (issue 25): each secret and each look-alike of
the redaction corpus is written through a real ``Conversation`` as plain text, in a markdown code
block, as dict (JSON) content, as a tool's JSON result, in a compaction summary, as a role name
and in a message's metadata (which reaches disk in a save file), and the raw bytes under the
agent's folder are searched: no part of a secret may be there, and no look-alike may change.

Every run prints recall per shape and the false positives (``record_property``: the suite's
"memorylab figures" section).
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redaction_corpus import CORPUS, LOOKALIKES, CorpusSecret

from memorylab import Conversation
from memorylab.memory._redact import MARKED

# the label right before a secret (``DD_API_KEY=«…»``, ``"SessionToken": "«…»``), where a
# settings line or a call's argument starts: the dict shape writes it as a key, the way an app's
# settings or a tool's arguments hold it
_LABEL = re.compile(
    r"""\A(?:[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?|.*[{,(][ \t]*)"""
    r"""["']?([A-Za-z_][\w.-]{1,60})["']?[ \t]*[:=][ \t]*["']?\Z"""
)


def _dict_form(text: str, secret: str) -> dict[str, Any]:
    """Content as a dict: ``{LABEL: secret}`` when a label stands right before the secret, else
    the text as a field."""
    head = text[: text.find(secret)] if secret in text else ""
    line = head.rpartition("\n")[2]
    label = _LABEL.search(line)
    # a settings line (NAME=value, or a one-line "name: value"); not a key deep in a document
    if label is not None and ("\n" not in head or "=" in line):
        return {"settings": {label[1]: secret}, "source": ".env"}
    return {"text": text, "source": "user"}


Write = Callable[[Conversation, str, str], None]


def _plain(conv: Conversation, text: str, secret: str) -> None:
    conv.add("User", text)


def _code_block(conv: Conversation, text: str, secret: str) -> None:
    conv.add("Assistant", f"Run this:\n\n```bash\n{text}\n```\n")


def _json_content(conv: Conversation, text: str, secret: str) -> None:
    conv.add("User", _dict_form(text, secret))


def _tool_result(conv: Conversation, text: str, secret: str) -> None:
    # what memorylab.tools writes for a tool that returns a dict: JSON text
    result = json.dumps({"exit_code": 0, "stdout": text, "stderr": ""}, ensure_ascii=False)
    conv.add("Tool", result, tool_call_id="call_0")


def _summary(conv: Conversation, text: str, secret: str) -> None:
    conv.compact(f"The user set up the deployment.\n{text}\nThen they asked for a review.")


def _role(conv: Conversation, text: str, secret: str) -> None:
    conv.add(f"Deployer {' '.join(text.split())}", "done")


def _metadata(conv: Conversation, text: str, secret: str) -> None:
    conv.add("User", "deployed", metadata={"env": _dict_form(text, secret), "note": text})
    assert conv.memory_md_path is not None
    conv.save_as_json(conv.memory_md_path.parent / "conversation.json")


SHAPES: dict[str, Write] = {
    "plain text": _plain,
    "markdown code block": _code_block,
    "JSON / dict content": _json_content,
    "tool result": _tool_result,
    "summary": _summary,
    "role name": _role,
    "metadata": _metadata,
}


def _sizes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def _written(folder: Path, before: dict[Path, int]) -> bytes:
    """The bytes a write added under the agent's folder: what was appended to a file, a file
    rewritten or created whole. Archives are left out: each is a copy of a MEMORY.md already
    read (and would show the previous entry's summary)."""
    chunks = []
    for path, size in sorted(_sizes(folder).items()):
        if "archive" in path.relative_to(folder).parts or before.get(path) == size:
            continue
        data = path.read_bytes()
        old = before.get(path, 0)
        chunks.append(data[old:] if path.suffix == ".jsonl" else data)
    return b"".join(chunks)


def _pieces(secret: str) -> list[str]:
    """What must not be on disk: the secret, or each line of a multi-line one (JSON and the
    role shape write its line breaks differently), as UTF-8 bytes."""
    lines = [line.strip() for line in secret.splitlines()]
    return [line for line in lines if len(line) >= 6] or [secret]


def _kept_off(data: bytes, entry: CorpusSecret) -> bool:
    return not any(piece.encode() in data for secret in entry.secrets for piece in _pieces(secret))


def _measure(workspace: Path) -> tuple[dict[str, list[CorpusSecret]], dict[str, list[str]]]:
    """Each shape writes every entry through one Conversation of its own, one at a time; what
    each write put on disk is searched (and, at the end, every file of the agent, archives
    included, for every secret)."""
    missed: dict[str, list[CorpusSecret]] = collections.defaultdict(list)
    changed: dict[str, list[str]] = collections.defaultdict(list)
    for n, (shape, write) in enumerate(SHAPES.items()):
        conv = Conversation(agent_name=f"shape{n}", workspace_dir=str(workspace))
        assert conv.memory_md_path is not None
        folder = conv.memory_md_path.parent
        # look-alikes first: MEMORY.md is read whole, and must hold no marker of a secret yet
        items: list[tuple[CorpusSecret | None, str, str]] = [
            (None, t.text, t.text) for t in LOOKALIKES
        ] + [(e, e.text, e.secrets[0]) for e in CORPUS]
        for entry, text, secret in items:
            conv.conversation_history.clear()  # a save file holds this entry only
            before = _sizes(folder)
            write(conv, text, secret)
            data = _written(folder, before)
            if entry is None:
                if MARKED.encode() in data:
                    changed[shape].append(text)
            elif not _kept_off(data, entry):
                missed[shape].append(entry)
        everything = b"".join(p.read_bytes() for p in sorted(_sizes(folder)))
        for entry in CORPUS:
            if entry not in missed[shape] and not _kept_off(everything, entry):
                missed[shape].append(entry)
    return missed, changed


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    return _measure(tmp_path_factory.mktemp("shapes"))


def test_secrets_are_off_disk_in_every_shape(
    measured: tuple[dict[str, list[CorpusSecret]], dict[str, list[str]]],
    record_property: Callable[[str, object], None],
) -> None:
    missed, changed = measured
    formats = len({e.format for e in CORPUS})
    rows = [f"{'shape':<22} {'secrets off disk':>18} {'look-alikes changed':>20}"]
    recalls = {}
    for shape in SHAPES:
        kept = len(CORPUS) - len(missed[shape])
        recalls[shape] = kept / len(CORPUS)
        rows.append(
            f"{shape:<22} {f'{kept}/{len(CORPUS)}':>12} {recalls[shape]:>5.1%} "
            f"{f'{len(changed[shape])}/{len(LOOKALIKES)}':>20}"
        )
    print("\n" + "\n".join(rows))
    for shape in SHAPES:
        for entry in missed[shape]:
            print(f"missed ({shape}): {entry.format}")
        for text in changed[shape]:
            print(f"changed ({shape}): {text[:80]!r}")
    worst = min(recalls, key=recalls.__getitem__)
    false_positives = sum(len(v) for v in changed.values())
    record_property(
        "summary_line",
        f"redaction in every message shape: {len(CORPUS)} secrets in {formats} formats, "
        + ", ".join(f"{shape} {recalls[shape]:.1%}" for shape in SHAPES)
        + f" off disk (lowest: {worst}); {false_positives} of {len(LOOKALIKES) * len(SHAPES)} "
        "look-alike writes changed",
    )
    assert len(CORPUS) >= 120 and formats >= 70 and len(LOOKALIKES) >= 80
    assert {shape: r for shape, r in recalls.items() if r < 0.95} == {}
    assert false_positives == 0, dict(changed)
