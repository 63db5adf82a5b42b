"""Sample workspace agent Researcher: a literature-review agent with search and notes tools.

The tools are real, deterministic functions; the sessions are scripted tasks."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from _gen_workspace import AgentPlan, Call, Task, describe

_PAPERS = [
    ("MemGPT: Towards LLMs as Operating Systems", 2023, "arXiv", "paged memory"),
    (
        "Reflexion: Language Agents with Verbal Reinforcement Learning",
        2023,
        "NeurIPS",
        "reflection memory",
    ),
    ("Generative Agents: Interactive Simulacra of Human Behavior", 2023, "UIST", "memory stream"),
    ("Recursively Summarizing Enables Long-Term Dialogue Memory", 2023, "arXiv", "rolling summary"),
    ("LLMLingua: Compressing Prompts for Accelerated Inference", 2023, "EMNLP", "token pruning"),
    ("Adapting Language Models to Compress Contexts", 2023, "EMNLP", "summary vectors"),
    ("Learning to Compress Prompts with Gist Tokens", 2023, "NeurIPS", "gist tokens"),
    ("Augmenting Language Models with Long-Term Memory", 2023, "NeurIPS", "retrieval memory"),
    ("Evaluating Very Long-Term Conversational Memory of LLM Agents", 2024, "ACL", "benchmark"),
    (
        "RecurrentGPT: Interactive Generation of Arbitrarily Long Text",
        2023,
        "arXiv",
        "rolling summary",
    ),
    (
        "MemoryBank: Enhancing Large Language Models with Long-Term Memory",
        2024,
        "AAAI",
        "retrieval memory",
    ),
    (
        "Walking Down the Memory Maze: Beyond Context Limit through Interactive Reading",
        2023,
        "arXiv",
        "tree summary",
    ),
]
_NOTES = {
    "criteria": "Inclusion: 2020 onwards; LLM agents or assistants; a memory or compression "
    "mechanism; an evaluation. Exclusion: no code and no prompts released; position papers.",
    "taxonomy": "Organized by what is kept: raw turns (Type-T), summaries (Type-S), retrieved "
    "facts (Type-R), learned vectors (Type-V). Hybrids by primary mechanism.",
}


def search_papers(query: str, limit: int = 5) -> list[dict[str, object]]:
    """Search the review's library by words in the title or mechanism.

    Args:
        query: search words
        limit: the most results
    """
    words = set(query.lower().split())
    scored = []
    for title, year, venue, method in _PAPERS:
        score = len(words & set(f"{title} {method}".lower().replace(":", "").split()))
        if score:
            scored.append(
                (
                    -score,
                    title,
                    {
                        "title": title,
                        "year": year,
                        "venue": venue,
                        "mechanism": method,
                        "score": score,
                    },
                )
            )
    return [item for _, _, item in sorted(scored)[:limit]]


def read_notes(name: str) -> str:
    """Read one of the review's note files.

    Args:
        name: the note, e.g. criteria or taxonomy
    """
    if name not in _NOTES:
        raise KeyError(f"no note named {name!r}; notes: {sorted(_NOTES)}")
    return _NOTES[name]


def _researcher(rng: random.Random) -> list[list[Task]]:
    queries = [
        "rolling summary memory",
        "compress prompts tokens",
        "long-term memory agents",
        "retrieval memory language models",
        "conversational memory benchmark",
    ]

    def search() -> Task:
        query = rng.choice(queries)

        def answer(results: list[str]) -> str:
            papers = json.loads(results[0])
            titles = "; ".join(f"{p['title']} ({p['venue']} {p['year']})" for p in papers)
            return (
                f"{len(papers)} papers for '{query}': {titles}. All of them are already in the "
                "Zotero collection agent-memory-2026."
            )

        return Task(
            f"Search the library for '{query}'.",
            [[Call("search_papers", {"query": query, "limit": 4})]],
            answer,
        )

    def notes() -> Task:
        name = rng.choice(["criteria", "taxonomy"])

        def answer(results: list[str]) -> str:
            return (
                f"From the {name} notes: {results[0]} So the paper you mention fits under "
                "Type-S if it replaces old turns with a summary."
            )

        return Task(
            f"What do our {name} notes say? I need it for the methods section.",
            [[Call("read_notes", {"name": name})]],
            answer,
        )

    def compare() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "The rolling-summary papers and the token-pruning papers do not measure the "
                "same thing: "
                + " ".join(describe(r) for r in results)
                + " We report token-level compression ratios for both."
            )

        return Task(
            "Compare the rolling-summary papers with the prompt compression ones.",
            [
                [
                    Call("search_papers", {"query": "rolling summary"}),
                    Call("search_papers", {"query": "compressing prompts"}),
                ]
            ],
            answer,
        )

    def missing() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "There is no 'deadlines' note; " + describe(results[0]) + " The workshop "
                "limit is 9 pages plus references, per your message last week."
            )

        return Task(
            "What was our deadline note again?",
            [[Call("read_notes", {"name": "deadlines"})]],
            answer,
        )

    def chat() -> Task:
        text = rng.choice(
            [
                "Decision: we exclude papers that release neither code nor prompts.",
                "My supervisor is Prof. Ingrid Salo; she wants the taxonomy first.",
                "Coffee break. Keep the list of open questions for later.",
            ]
        )
        return Task(text, [], lambda results: "Noted; I'll apply it to the remaining papers.")

    factories: list[Callable[[], Task]] = [search, search, notes, compare, missing, chat]
    return [[rng.choice(factories)() for _ in range(rng.randint(9, 13))] for _ in range(5)]


def plan(seed: int) -> AgentPlan:
    return AgentPlan(
        "Researcher",
        "You are Researcher, helping with a systematic literature review.",
        [search_papers, read_notes],
        _researcher(random.Random(f"{seed}:rs")),
    )
