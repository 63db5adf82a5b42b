"""Transcript domain: a systematic literature review on memory and context compression for LLM
agents."""

from __future__ import annotations

from datetime import UTC, datetime

from _gen_common import (
    Domain,
    Vocab,
    choice,
    decimal,
    hexid,
    json_events,
    json_rows,
    log_output,
    number,
)
from _gen_facts_research import facts

SLOTS = {
    "topic": [
        "rolling summaries",
        "retrieval-augmented memory",
        "memory consolidation",
        "token pruning",
        "hierarchical summarization",
        "episodic memory stores",
        "KV-cache compression",
        "reflection-based memory",
        "long-context fine-tuning",
    ],
    "stage": [
        "the title screening",
        "the abstract screening",
        "the full-text review",
        "the data extraction",
        "the quality assessment",
    ],
    "section": [
        "the related work section",
        "the taxonomy section",
        "the methods section",
        "the discussion",
        "the threats-to-validity paragraph",
        "the introduction",
    ],
    "paper": [
        "the MemGPT paper",
        "the Reflexion paper",
        "the Generative Agents paper",
        "the LongMem paper",
        "the RecurrentGPT paper",
        "the LLMLingua paper",
        "the Gist tokens paper",
        "the AutoCompressor paper",
    ],
    "file": [
        "notes/outline.md",
        "notes/reading/index.md",
        "drafts/related_work.tex",
        "analysis/plots.py",
        "refs/raw.bib",
        "notes/questions.md",
    ],
    "person": ["my supervisor", "the second rater", "the reviewers", "the reading group"],
}

_LOG_LINES = [
    "fetched page {n} ({n} results)",
    "dedupe: merged {n} records by DOI",
    "dedupe: {n} records without DOI, matched by title",
    "rate limited, sleeping {f} s",
    "wrote {n} entries",
    "skipping withdrawn preprint {id}",
    "parsed PDF in {f} s",
]

TOOL_OUTPUTS = [
    (
        [
            'python scripts/search.py --source semantic-scholar --query "agent memory"',
            'python scripts/search.py --source acl --query "context compression"',
        ],
        json_events(
            {
                "paperId": hexid(40),
                "title": choice(
                    [
                        "Compressing Context for Long-Horizon Agents",
                        "Memory Streams for Interactive Agents",
                        "Learning to Summarize Dialogue State",
                        "Selective Context Retention in LLMs",
                        "Recurrent Memory for Transformers",
                        "Evaluating Long-Term Conversational Memory",
                        "Prompt Compression via Token Classification",
                        "Hierarchical Memory for Assistants",
                    ]
                ),
                "year": number(2019, 2026),
                "venue": choice(["ACL", "EMNLP", "NeurIPS", "ICLR", "arXiv", "TACL", "COLM"]),
                "citationCount": number(0, 2500),
            }
        ),
    ),
    (
        [
            "python -m screening.export --stage abstract --format json",
            "sqlite3 review.db 'select * from screening limit 40'",
        ],
        json_rows(
            [
                ("record", number(1, 1500)),
                ("rater_a", choice(["include", "exclude", "maybe"])),
                ("rater_b", choice(["include", "exclude", "maybe"])),
                (
                    "reason",
                    choice(
                        ["off-topic", "no evaluation", "not LLM", "duplicate", "", "position paper"]
                    ),
                ),
            ]
        ),
    ),
    (
        ["python scripts/fetch_pdfs.py --missing", "python scripts/dedupe.py --dry-run"],
        log_output([("INFO", 10), ("WARN", 2)], ["fetch", "dedupe", "pdf", "bib"], _LOG_LINES),
    ),
    (
        ["python analysis/summary_table.py", "python -m extraction.stats"],
        json_rows(
            [
                (
                    "method",
                    choice(["rolling summary", "vector store", "hybrid", "pruning", "fine-tuning"]),
                ),
                ("papers", number(1, 40)),
                ("median_ratio", decimal(1.5, 30, 1)),
                ("reports_cost", choice([True, False])),
            ]
        ),
    ),
]

VOCAB = Vocab(
    slots=SLOTS,
    openings=[
        "Hi! Let's continue with the review. Today I want to get through {stage} for the "
        "papers on {topic}.",
        "Morning. I read {paper} again last night and I have questions. But first, where are "
        "we with {stage}?",
        "Back to the survey. {person} wants a draft of {section} by the end of the week.",
        "Let's pick up the literature review. Can you remind me of the open questions?",
    ],
    closings=[
        "Okay, I'm done for today. Please note where we are so I can continue tomorrow.",
        "Let's stop. Summarize what we decided today, I'll send it to {person}.",
        "That's enough for one day. What should I read before our next session?",
    ],
    recaps=[
        "Where we are: {stage} is done for {topic}; {section} has a first outline; open question "
        "is how to classify {paper}. Suggested reading: {paper}.",
        "Today:\n- finished {stage} for the batch on {topic}\n- drafted notes in {file}\n- open: "
        "disagreements with {person} on a few borderline papers\nNext: {stage}.",
        "Summary: mostly reading and notes. Nothing changed in the inclusion criteria. Next time "
        "we start with {section}.",
    ],
    tasks=[
        "Can you run the search again for {topic}? I think we missed some recent preprints.",
        "Please go through the screening export and list the papers where the raters disagree.",
        "Summarize {paper} for me: problem, method, evaluation, and what they compress.",
        "I need a table of the methods on {topic} with their compression ratios.",
        "Draft two paragraphs for {section} about {topic}.",
        "Check {file} for broken citations, the build complained last time.",
        "How many papers on {topic} report the cost of their memory mechanism?",
        "Compare {paper} and {paper}: do they measure the same thing?",
    ],
    plans=[
        "Okay. I'll run the search with the same query as before, restricted to the last six "
        "months, and deduplicate against the library.",
        "Sure. I'll export the screening decisions for {stage} and look for disagreements first, "
        "then group them by reason.",
        "Plan: read the method and evaluation sections of {paper}, extract the numbers into the "
        "sheet, then write the summary.",
        "I'll start from the extraction sheet and only fill in what the papers state explicitly.",
    ],
    narrations=[
        "Running `{command}` to get the current state.",
        "Let me fetch the data first with `{command}`.",
        "Querying the records: `{command}`",
        "Running `{command}`; this takes a few seconds because of rate limits.",
    ],
    findings=[
        "The search found a handful of new preprints on {topic}; most are incremental, but two "
        "look relevant for {section}.",
        "The raters disagree mostly on position papers and on papers that evaluate memory only "
        "as a side result. That's a criteria problem, not a rater problem.",
        "{paper} compresses the dialogue history into a running summary and evaluates on long "
        "conversations, but it never reports how much of the original information survives.",
        "Only a minority of the papers on {topic} report cost at all, and those that do use "
        "different units (tokens, dollars, GPU hours), so a direct comparison is hard.",
        "The citation problems come from duplicate keys in {file}: the same paper was imported "
        "twice, once from arXiv and once from the proceedings.",
        "They don't measure the same thing: one reports task success, the other reports recall "
        "of planted facts. I'd present them in separate columns.",
    ],
    followups=[
        "Is that enough to justify a separate category in the taxonomy?",
        "What would {person} say about that? They're picky about definitions.",
        "Could you double-check the numbers? I don't want to misquote anyone.",
        "Fine. Does that change anything for {stage}, or only for the writing?",
    ],
    answers=[
        "I think so: the mechanism is different enough, and there are enough papers to fill it. "
        "We can merge it back later if the reviewers disagree.",
        "They'd want a definition that doesn't depend on the architecture. I'd define the "
        "category by what is kept, not by how.",
        "I rechecked them against the PDFs; two numbers were from the appendix, I marked those "
        "in the sheet.",
        "Only for the writing. The screening decisions stay as they are.",
    ],
    explain_requests=[
        "Explain the main families of memory mechanisms to me as if I were a reviewer who has "
        "not read these papers.",
        "Write a short methods paragraph about our screening process, for {section}.",
        "Can you explain why the compression ratios in these papers are hard to compare?",
    ],
    paragraphs=[
        "Most approaches fall into three families. The first keeps a running summary of the "
        "conversation and replaces old turns with it. The second stores past turns or extracted "
        "facts in an external store and retrieves them when needed. The third changes the model "
        "itself, for example with compressed tokens or a longer trained context.",
        "Rolling summaries are the simplest to deploy because they need nothing but the model "
        "itself. Their weakness is that every summary is lossy, and errors accumulate: a detail "
        "dropped in the first summary is gone for good, however good the later ones are.",
        "Retrieval-based memory keeps the original text, so nothing is lost, but it moves the "
        "problem to the retriever. If the question does not resemble the stored passage, the "
        "right memory is never found, and the agent behaves as if it had forgotten.",
        "The compression ratios are hard to compare because papers define them differently: "
        "some count characters, some tokens of different tokenizers, some the ratio of prompt "
        "sizes at a fixed task accuracy. Without a common unit, a table of ratios mixes apples "
        "and oranges.",
        "Evaluation is the weakest part of the literature. Many papers report end-task accuracy "
        "only, which hides what was forgotten. Probing for planted facts, as a few recent papers "
        "do, measures retention directly and is much easier to interpret.",
        "Screening followed the usual two stages. Two raters screened titles and abstracts "
        "independently; conflicts were resolved by discussion. Full texts were then read by one "
        "rater and checked by the second for a random sample.",
        "Cost is rarely reported, although it decides whether a method is usable. A summary "
        "that costs another model call every few turns can double the price of a long session, "
        "and that trade-off deserves a column in our table.",
        "Threats to validity: our search terms may miss work that uses different vocabulary, "
        "for example from the dialogue-systems community, and preprints change after we read "
        "them. We mitigate the first with snowballing and the second by recording versions.",
        "For the taxonomy, we describe each method by what it keeps (raw turns, extracted "
        "facts, summaries, learned vectors), when it writes memory, and when it reads it. These "
        "three questions separate the families cleanly.",
        "Finally, many systems combine mechanisms, typically a rolling summary for recent "
        "context and retrieval for older facts. We classify such hybrids by their primary "
        "mechanism and note the secondary one in the table.",
    ],
    user_chatter=[
        "Thanks, that's helpful. Let me read it properly before we go on.",
        "Okay, coffee first. Then we continue with the next batch.",
        "Nice, that's clearer than the way I wrote it last week.",
        "Sorry, {person} called. Let's continue where we left off.",
        "Good. Let's keep going, I want to finish this batch today.",
    ],
    assistant_chatter=[
        "Sure, take your time. I'll keep the list of open questions ready.",
        "Sounds good. I'll continue with the next batch when you're back.",
        "Understood, I won't change the criteria without asking you.",
        "Ready when you are; I have the notes from the last session.",
    ],
    pastes=[
        "My notes on {paper} so far:\n```\n- problem: context grows without bound\n- method: "
        "summarize every N turns, keep summary + last k turns\n- eval: long dialogue QA, "
        "accuracy only\n- missing: cost, what gets lost\n```\nAnything to add?",
        "The reviewer comment from the workshop version:\n```\nThe survey lists many systems but "
        "does not explain how they differ. A taxonomy with clear criteria would make the "
        "contribution much stronger.\n```\nWhat do you make of it?",
        "LaTeX error from the last build:\n```\nPackage natbib Warning: Citation 'li2023ctx' on "
        "page 4 undefined on input line 212.\nLaTeX Warning: There were undefined references.\n"
        "```\nI think that's in {file}.",
    ],
    reviews=[
        "Good notes. I'd add the summary frequency they settled on and whether the summary is "
        "written by the same model; both matter when comparing with {paper}.",
        "It's fair criticism, and our taxonomy answers it: if we define the categories by what "
        "is kept and when it is read, the differences become explicit.",
        "Yes, the key is missing from the bibliography; it was renamed when we cleaned the "
        "duplicates. I'll map the old key to the new one.",
    ],
    tool_outputs=TOOL_OUTPUTS,
)


DOMAIN = Domain(
    name="literature-review",
    prefix="lr",
    seed=20260406,
    description=(
        "A PhD student and an assistant run a systematic literature review on memory and context "
        "compression for LLM agents over several sessions: searches, screening exports, reading "
        "notes, drafting, bibliography chores and decisions on inclusion criteria."
    ),
    start=datetime(2026, 4, 6, tzinfo=UTC),
    sessions=(7, 7),
    messages_per_session=(160, 200),
    vocab=VOCAB,
    facts=facts,
)
