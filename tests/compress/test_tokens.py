"""Offline token counting: tiktoken encodings from litellm's bundle, the legacy Claude tokenizer."""

from __future__ import annotations

import dataclasses
import doctest
import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st

from memorylab.compress import _tokens as tokens
from memorylab.compress._tokens import (
    CLAUDE_LEGACY,
    PARALLEL_MIN_CHARS,
    TokenCounter,
    count_tokens,
    encoding_name_for_model,
    get_token_counter,
)
from memorylab.errors import InvalidSetting, PrerequisiteError

SAMPLES = [
    "",
    "hello world",
    "Hello, World!\n\n  indented\ttabs\r\nwindows",
    "naïve café — déjà vu; 日本語のテキスト; emoji 🧠🧪; Ελληνικά; русский",
    "def f(x: int) -> int:\n    return x ** 2  # square\n" * 20,
    "<|endoftext|> <|fim_prefix|><|fim_middle|><|fim_suffix|> <|endofprompt|>",
    "a" * 10_000,
    "   \n\n\n   ",
    "lone surrogate \ud800 here",
]


@pytest.fixture(scope="module")
def encodings() -> Iterator[Mapping[str, Any]]:
    """tiktoken's own encodings, loaded through memorylab (so the offline cache is set up)."""
    count_tokens("", "gpt-4")
    count_tokens("", "gpt-4o")
    yield {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}


def run_python(
    code: str, *, unset: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (timeout: it must finish, not hang on a download)."""
    environ = dict(os.environ)
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "CUSTOM_TIKTOKEN_CACHE_DIR", *unset):
        environ.pop(name, None)
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done


# --------------------------------------------------------------------------- counts


def test_hello_world_is_two_tokens(encodings: Mapping[str, Any]) -> None:
    assert encodings["cl100k_base"].encode_ordinary("hello world") == [15339, 1917]
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", "gpt-4") == 2
    assert count_tokens("hello world", "gpt-4o") == len(
        encodings["o200k_base"].encode_ordinary("hello world")
    )


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o", None, "gemini-2.5-pro"])
@pytest.mark.parametrize("text", SAMPLES, ids=range(len(SAMPLES)))
def test_counts_match_tiktoken(model: str | None, text: str, encodings: Mapping[str, Any]) -> None:
    encoding = encodings[encoding_name_for_model(model)]
    assert count_tokens(text, model) == len(encoding.encode_ordinary(text))


@given(st.text())
def test_counts_match_tiktoken_for_any_text(text: str) -> None:
    cl100k = tiktoken.get_encoding("cl100k_base")  # loaded by count_tokens first
    assert count_tokens(text) == len(cl100k.encode_ordinary(text))


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o", "claude-sonnet-4-5"])
def test_special_token_text_is_ordinary_text(model: str) -> None:
    counter = TokenCounter(model)
    for special in ("<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<EOT>", "<META>"):
        assert counter.count(special) > 1, special  # several ordinary tokens, not one special
        assert counter.count(f"a {special} b") > 3


# Any code point, lone surrogates included, mixed with special-token text.
any_text = st.lists(
    st.text(st.characters(exclude_categories=())) | st.sampled_from(["<|endoftext|>", "<EOT>"])
).map("".join)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-opus-4-1"])
@given(text=any_text)
def test_counts_never_raise(model: str, text: str) -> None:
    counter = get_token_counter(model)
    assert counter.count(text) >= (1 if text else 0)


def test_lone_surrogates_do_not_raise() -> None:
    for model in ("gpt-4", "gpt-4o", "claude-sonnet-4-5"):
        assert count_tokens("\ud800", model) >= 1
        assert (
            TokenCounter(model).count_batch(["\udfff" * PARALLEL_MIN_CHARS] * 2)
            == [count_tokens("\udfff" * PARALLEL_MIN_CHARS, model)] * 2
        )


def test_non_str_text_is_a_type_error() -> None:
    counter = TokenCounter("gpt-4o")
    with pytest.raises(TypeError, match="takes str"):
        counter.count(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes str"):
        counter.count_batch(["ok", None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one str"):
        counter.count_batch("a string")


# --------------------------------------------------------------------------- batches


def batch_texts() -> list[str]:
    long = "The quick brown fox jumps over the lazy dog. " * (PARALLEL_MIN_CHARS // 20)
    return ["", "short", long, "x" * PARALLEL_MIN_CHARS, long + "tail", "mixed 日本", long * 3]


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o", "claude-sonnet-4-5"])
@pytest.mark.parametrize("num_threads", [None, 1, 2, 4])
def test_batch_equals_loop(model: str, num_threads: int | None) -> None:
    counter = TokenCounter(model)
    texts = batch_texts()
    assert counter.count_batch(texts, num_threads=num_threads) == [counter(t) for t in texts]
    assert counter.count_batch(tuple(texts), num_threads) == [counter(t) for t in texts]
    assert counter.count_batch([]) == []


@given(
    st.lists(st.text(max_size=50) | st.just("word " * (PARALLEL_MIN_CHARS // 5 + 1)), max_size=6)
)
def test_batch_equals_loop_for_any_texts(texts: list[str]) -> None:
    counter = get_token_counter("gpt-4o")
    assert counter.count_batch(texts, num_threads=2) == [counter.count(t) for t in texts]


def test_big_batches_use_tiktoken_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    count_tokens("", "gpt-4o")
    encoding = tiktoken.get_encoding("o200k_base")
    calls: list[tuple[int, int]] = []
    original = encoding.encode_ordinary_batch

    def spy(texts: list[str], *, num_threads: int = 8) -> list[list[int]]:
        calls.append((len(texts), num_threads))
        return original(texts, num_threads=num_threads)

    monkeypatch.setattr(encoding, "encode_ordinary_batch", spy)
    texts = batch_texts()
    counter = TokenCounter("gpt-4o")
    expected = [counter(t) for t in texts]
    assert counter.count_batch(texts, num_threads=3) == expected
    assert calls == [(4, 3)]  # the four long texts, in parallel
    assert counter.count_batch(texts, num_threads=1) == expected  # a plain loop
    assert counter.count_batch(["a", "b", "c"] * 100) == [1, 1, 1] * 100  # small: a loop
    assert len(calls) == 1
    counter.count_batch(texts)  # default: all cores
    assert calls[-1][1] == min(os.cpu_count() or 1, 4)


@pytest.mark.parametrize("num_threads", [0, -1, True, 1.5, "2"])
def test_bad_num_threads(num_threads: object) -> None:
    with pytest.raises(InvalidSetting, match="num_threads"):
        TokenCounter().count_batch(["x"], num_threads=num_threads)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- model mapping

MAPPING = [
    ("gpt-4o", "o200k_base", True),
    ("gpt-4o-mini", "o200k_base", True),
    ("gpt-4o-2024-08-06", "o200k_base", True),
    ("chatgpt-4o-latest", "o200k_base", True),
    ("gpt-4.1", "o200k_base", True),
    ("gpt-4.1-nano", "o200k_base", True),
    ("gpt-4.5-preview", "o200k_base", True),
    ("gpt-5", "o200k_base", True),
    ("gpt-5-mini", "o200k_base", True),
    ("gpt-5.1-codex", "o200k_base", True),
    ("o1", "o200k_base", True),
    ("o1-mini", "o200k_base", True),
    ("o3", "o200k_base", True),
    ("o3-pro", "o200k_base", True),
    ("o4-mini", "o200k_base", True),
    ("o4-mini-2025-04-16", "o200k_base", True),
    ("gpt-oss-120b", "o200k_base", True),
    ("gpt-4", "cl100k_base", True),
    ("gpt-4-0613", "cl100k_base", True),
    ("gpt-4-32k", "cl100k_base", True),
    ("gpt-4-turbo", "cl100k_base", True),
    ("gpt-3.5-turbo", "cl100k_base", True),
    ("gpt-3.5-turbo-16k", "cl100k_base", True),
    ("gpt-35-turbo", "cl100k_base", True),
    ("text-embedding-ada-002", "cl100k_base", True),
    ("text-embedding-3-small", "cl100k_base", True),
    ("claude-sonnet-4-5", CLAUDE_LEGACY, False),
    ("claude-opus-4-1-20250805", CLAUDE_LEGACY, False),
    ("claude-haiku-4-5", CLAUDE_LEGACY, False),
    ("claude-3-5-sonnet-20241022", CLAUDE_LEGACY, False),
    ("claude-2.1", CLAUDE_LEGACY, False),
    (None, "cl100k_base", False),
    ("gemini-2.5-pro", "cl100k_base", False),
    ("mistral-large-latest", "cl100k_base", False),
    ("deepseek-chat", "cl100k_base", False),
    ("llama-3.1-8b-instant", "cl100k_base", False),
    ("meta-llama/Llama-3.1-8B-Instruct", "cl100k_base", False),
    ("ollama/llama2", "cl100k_base", False),
    ("gpt-4.2-hypothetical", "cl100k_base", False),
    ("o10", "cl100k_base", False),
    ("my-custom-deployment", "cl100k_base", False),
]


@pytest.mark.parametrize(("model", "encoding", "exact"), MAPPING)
def test_model_mapping(model: str | None, encoding: str, exact: bool) -> None:
    assert encoding_name_for_model(model) == encoding
    counter = TokenCounter(model)
    assert (counter.model, counter.encoding_name, counter.exact) == (model, encoding, exact)


def tiktoken_knows(model: str) -> str | None:
    try:
        name: str = tiktoken.encoding_name_for_model(model)
    except KeyError:
        return None
    return name.replace("o200k_harmony", "o200k_base")  # the same text tokens, more specials


def test_exact_mapping_agrees_with_tiktoken() -> None:
    exact = [(model, encoding) for model, encoding, is_exact in MAPPING if is_exact and model]
    known = [(model, encoding, tiktoken_knows(model)) for model, encoding in exact]
    assert [row for row in known if row[2] is not None and row[1] != row[2]] == []
    assert sum(row[2] is not None for row in known) >= 20  # tiktoken knows most of them


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai/gpt-4o", "o200k_base"),
        ("OpenAI/GPT-4o", "o200k_base"),
        ("azure/eu/gpt-4o", "o200k_base"),
        ("azure/gpt-35-turbo", "cl100k_base"),
        ("openrouter/openai/gpt-4.1-mini", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:my-org::abc123", "o200k_base"),
        ("openai/ft:gpt-3.5-turbo:org::x", "cl100k_base"),
        ("  gpt-4o  ", "o200k_base"),
        ("anthropic/claude-sonnet-4-5", CLAUDE_LEGACY),
        ("openrouter/anthropic/claude-3.7-sonnet", CLAUDE_LEGACY),
        ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", CLAUDE_LEGACY),
        ("bedrock/anthropic.claude-v2:1", CLAUDE_LEGACY),
        ("vertex_ai/claude-opus-4-1@20250805", CLAUDE_LEGACY),
        ("groq/llama-3.3-70b-versatile", "cl100k_base"),
        ("openai/my-claudette-finetune", "cl100k_base"),
    ],
)
def test_provider_prefix_is_stripped(model: str, encoding: str) -> None:
    assert encoding_name_for_model(model) == encoding


@pytest.mark.parametrize("model", ["", "   ", 42, b"gpt-4o", ["gpt-4o"]])
def test_bad_model_names(model: object) -> None:
    with pytest.raises(InvalidSetting, match="model must be"):
        TokenCounter(model)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="model must be"):
        get_token_counter(model)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="model must be"):
        encoding_name_for_model(model)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the counter object


def test_token_counter_is_frozen_and_hashable_by_model() -> None:
    a, b = TokenCounter("gpt-4o"), TokenCounter("gpt-4o")
    assert a == b and hash(a) == hash(b) and len({a, b, TokenCounter("gpt-4")}) == 2
    assert a != TokenCounter("openai/gpt-4o")  # compared by the model as given
    assert TokenCounter() == TokenCounter(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.model = "gpt-4"  # type: ignore[misc]
    assert repr(a) == "TokenCounter(model='gpt-4o', encoding_name='o200k_base', exact=True)"
    assert a("hello world") == a.count("hello world") == 2


def test_get_token_counter_is_cached() -> None:
    assert get_token_counter("gpt-4o") is get_token_counter("gpt-4o")
    assert get_token_counter() is get_token_counter(None)
    assert get_token_counter("claude-sonnet-4-5").encoding_name == CLAUDE_LEGACY


def test_claude_legacy_counts_more_than_cl100k_on_prose() -> None:
    text = inspect.getsource(tokens)
    assert count_tokens(text, "claude-sonnet-4-5") > count_tokens(text)


def test_module_doctests() -> None:
    result = doctest.testmod(tokens)
    assert result.failed == 0
    assert result.attempted >= 10


# --------------------------------------------------------------------------- offline files


def test_litellm_bundles_the_files_under_tiktokens_cache_keys() -> None:
    folder = tokens._litellm_tokenizers_dir()
    assert folder is not None and folder.name == "tokenizers"
    openai_public = importlib.import_module("tiktoken_ext.openai_public")

    for name, sha256 in tokens._EXPECTED_SHA256.items():
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        constructor = inspect.getsource(getattr(openai_public, name))
        assert url in constructor and sha256 in constructor  # still what tiktoken expects
        bundled = folder / hashlib.sha1(url.encode()).hexdigest()
        assert hashlib.sha256(bundled.read_bytes()).hexdigest() == sha256
    claude = json.loads((folder / "anthropic_tokenizer.json").read_text(encoding="utf-8"))
    assert claude["model"]["type"] == "BPE"


def test_import_loads_neither_litellm_nor_tiktoken() -> None:
    done = run_python(
        "import os, sys, memorylab.compress._tokens\n"
        "heavy = {'litellm', 'tiktoken', 'tokenizers', 'requests', 'huggingface_hub'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
        "print('TIKTOKEN_CACHE_DIR' in os.environ)\n"
    )
    assert done.stdout.split("\n")[:2] == ["[]", "False"]


def test_works_offline_with_the_cache_dir_unset() -> None:
    done = run_python(
        "import os, sys\n"
        "from memorylab.compress._tokens import count_tokens, TokenCounter\n"
        "print(count_tokens('hello world'), count_tokens('hello world', 'gpt-4o'),"
        " TokenCounter('o3-mini').count_batch(['a b c'] * 3),"
        " count_tokens('hello world', 'claude-sonnet-4-5'))\n"
        "print(os.environ['TIKTOKEN_CACHE_DIR'])\n"
        "print('litellm' in sys.modules, 'requests' in sys.modules)\n"
    )
    first, cache_dir, loaded = done.stdout.split("\n")[:3]
    assert first == "2 2 [3, 3, 3] 2"
    assert Path(cache_dir) == tokens._litellm_tokenizers_dir()
    assert loaded == "False False"  # litellm not imported, no download attempted


def test_llama_names_never_reach_a_hub() -> None:
    done = run_python(
        "import sys\n"
        "from memorylab.compress._tokens import count_tokens\n"
        "print(count_tokens('hello world', 'meta-llama/Llama-3.1-8B-Instruct'),"
        " count_tokens('hello world', 'llama-2-7b-chat'))\n"
        "hub = {'huggingface_hub', 'tokenizers', 'litellm', 'requests'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in hub))\n",
        unset=("HF_HUB_OFFLINE", "LITELLM_OFFLINE_MODE"),
    )
    assert done.stdout.split("\n")[:2] == ["2 2", "[]"]


PROBE_ERROR = (
    "import sys\n"
    "from memorylab.compress._tokens import count_tokens\n"
    "from memorylab.errors import PrerequisiteError\n"
    "try:\n"
    "    count_tokens('hello', 'gpt-4')\n"
    "except PrerequisiteError as error:\n"
    "    assert isinstance(error, ImportError)\n"
    "    print(error)\n"
    "    print('requests' in sys.modules)\n"
    "else:\n"
    "    print('no error')\n"
)
CL100K_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def test_missing_files_are_reported_before_any_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(PrerequisiteError, match="o200k_base file is not available offline"):
        tokens._check_bpe_file("o200k_base")
    monkeypatch.setattr(tokens, "_litellm_tokenizers_dir", lambda: None)
    with pytest.raises(PrerequisiteError, match=r"pip install 'litellm"):
        tokens._check_bpe_file("cl100k_base")
    with pytest.raises(PrerequisiteError, match=r"Claude tokenizer ships with litellm"):
        tokens._load_claude_legacy()


def test_empty_cache_dir_is_a_clear_prerequisite_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_python(PROBE_ERROR, TIKTOKEN_CACHE_DIR=str(empty))
    message, downloaded = done.stdout.split("\n")[:2]
    assert "cl100k_base" in message and "not available offline" in message
    assert str(empty / CL100K_KEY) in message  # exactly which file is missing
    assert "TIKTOKEN_CACHE_DIR" in message and str(tokens._litellm_tokenizers_dir()) in message
    assert downloaded == "False"  # failed before tiktoken tried the network
    assert list(empty.iterdir()) == []


def test_corrupt_cache_file_is_a_clear_error_and_is_kept(tmp_path: Path) -> None:
    (tmp_path / CL100K_KEY).write_bytes(b"not a BPE file")
    done = run_python(PROBE_ERROR, TIKTOKEN_CACHE_DIR=str(tmp_path))
    assert "corrupt" in done.stdout and "TIKTOKEN_CACHE_DIR" in done.stdout
    assert (tmp_path / CL100K_KEY).read_bytes() == b"not a BPE file"


def test_empty_cache_dir_variable_is_a_clear_error() -> None:
    done = run_python(PROBE_ERROR, TIKTOKEN_CACHE_DIR="")
    assert "TIKTOKEN_CACHE_DIR is set to an empty string" in done.stdout
    assert "never downloads" in done.stdout


def test_data_gym_cache_dir_is_respected(tmp_path: Path) -> None:
    done = run_python(PROBE_ERROR, DATA_GYM_CACHE_DIR=str(tmp_path))
    assert "DATA_GYM_CACHE_DIR" in done.stdout and str(tmp_path / CL100K_KEY) in done.stdout


def test_claude_counts_match_litellm_for_bare_claude_4_5_names() -> None:
    # litellm keeps "<EOT>" special, and it does not clean lone surrogates
    texts = [t for t in SAMPLES if "<" not in t and "\ud800" not in t]
    done = run_python(
        "import json, os, litellm\n"
        "from memorylab.compress._tokens import count_tokens\n"
        "texts = json.loads(os.environ['PROBE_TEXTS'])\n"
        "for model in ('claude-sonnet-4-5', 'claude-haiku-4-5'):\n"
        "    ours = [count_tokens(t, model) for t in texts]\n"
        "    theirs = [litellm.token_counter(model=model, text=t) for t in texts]\n"
        "    print(ours == theirs, ours, theirs)\n",
        PROBE_TEXTS=json.dumps(texts),
    )
    lines = done.stdout.strip().split("\n")
    assert len(lines) == 2 and all(line.startswith("True") for line in lines), done.stdout
