"""Planted facts of the literature review: what is said, by whom, the probe question
and its answer (values drawn from a seeded ``random.Random``)."""

from __future__ import annotations

import random

from _gen_common import FactSpec


def facts(rng: random.Random) -> list[FactSpec]:
    hits = rng.choice([1284, 1417, 1163])
    kept = rng.choice([612, 587, 655])
    final = rng.choice([74, 68, 81])
    kappa = rng.choice(["0.71", "0.78", "0.66"])
    pages = rng.choice([9, 12])
    ratio = rng.choice(["6.4x", "11.2x", "4.8x"])
    gpu = rng.choice([320, 450, 180])
    items = rng.choice([150, 200, 120])
    accuracy = rng.choice(["61.3%", "57.9%", "64.2%"])
    supervisor = rng.choice(["Ingrid Salo", "Kwame Mensah", "Beatriz Alonso"])
    rater = rng.choice(["Ben Achterberg", "Yusuf Demir", "Mei Lin"])
    collection = rng.choice(["agent-memory-2026", "ctx-compression-review"])
    cutoff = rng.choice(["2020", "2021"])
    F = FactSpec
    return [
        F(
            "number",
            "tool",
            f"{hits} hits",
            f"search finished: {hits} hits across 4 sources",
            "How many hits did the search return?",
            f"{hits} hits",
        ),
        F(
            "number",
            "assistant",
            f"{kept} unique records",
            f"After deduplication by DOI and title we are left with {kept} unique records.",
            "How many unique records were left after deduplication?",
            f"{kept} unique records",
            f"The PRISMA diagram starts from the {kept} unique records.",
        ),
        F(
            "number",
            "user",
            f"{final} papers in the final set",
            f"So we end up with {final} papers in the final set, that's manageable.",
            "How many papers are in the final set?",
            f"{final} papers",
            f"All {final} papers in the final set now have an extraction row.",
        ),
        F(
            "number",
            "assistant",
            f"Cohen's kappa of {kappa}",
            f"Agreement on the abstract stage was a Cohen's kappa of {kappa}, substantial by the "
            "usual reading.",
            "What was the inter-rater agreement on the abstract stage?",
            f"kappa of {kappa}",
        ),
        F(
            "number",
            "user",
            f"{pages} pages plus references",
            f"The venue allows {pages} pages plus references, so we need to be strict.",
            "What page limit does the venue have?",
            f"{pages} pages",
            f"We're already at the {pages} pages plus references limit, cut something.",
        ),
        F(
            "number",
            "assistant",
            f"ratio of {ratio}",
            f"The best method in that family reaches a token compression ratio of {ratio} at equal "
            "accuracy.",
            "What token compression ratio does the best method reach?",
            ratio,
        ),
        F(
            "number",
            "user",
            f"{gpu} GPU hours",
            f"For the replication we have {gpu} GPU hours on the cluster, not more.",
            "How many GPU hours are available for the replication?",
            f"{gpu} GPU hours",
        ),
        F(
            "number",
            "assistant",
            f"{items} hand-labelled items",
            f"I'll validate the LLM judge on {items} hand-labelled items before we trust it.",
            "On how many hand-labelled items is the judge validated?",
            f"{items} hand-labelled items",
            f"The {items} hand-labelled items are in the validation sheet now.",
        ),
        F(
            "number",
            "tool",
            f"baseline_accuracy: {accuracy}",
            f"baseline_accuracy: {accuracy}",
            "What baseline accuracy did the replication report?",
            accuracy,
        ),
        F(
            "path",
            "assistant",
            "notes/screening/round2.csv",
            "The decisions of the second round are in notes/screening/round2.csv.",
            "Where are the second-round screening decisions?",
            "notes/screening/round2.csv",
            "I added the missing reasons to notes/screening/round2.csv.",
        ),
        F(
            "path",
            "user",
            "refs/library.bib",
            "The master bibliography is refs/library.bib; don't edit the exported copies.",
            "Which file is the master bibliography?",
            "refs/library.bib",
        ),
        F(
            "path",
            "assistant",
            "drafts/survey_main.tex",
            "The main document is drafts/survey_main.tex, each section is an \\input file.",
            "Which file is the main LaTeX document?",
            "drafts/survey_main.tex",
            "Compile drafts/survey_main.tex twice so the references resolve.",
        ),
        F(
            "path",
            "assistant",
            "figures/compression_vs_accuracy.pdf",
            "I saved the plot as figures/compression_vs_accuracy.pdf.",
            "Where is the compression-versus-accuracy plot saved?",
            "figures/compression_vs_accuracy.pdf",
        ),
        F(
            "path",
            "user",
            "scripts/dedupe_refs.py",
            "The script that merges duplicate references is scripts/dedupe_refs.py, written by "
            "the previous student.",
            "Which script merges duplicate references?",
            "scripts/dedupe_refs.py",
        ),
        F(
            "path",
            "assistant",
            "data/extraction/sheet_v2.csv",
            "Extraction goes into data/extraction/sheet_v2.csv, one row per paper.",
            "Where does the data extraction go?",
            "data/extraction/sheet_v2.csv",
            "Double-check data/extraction/sheet_v2.csv before we plot anything.",
        ),
        F(
            "path",
            "user",
            "notes/reading/memgpt.md",
            "My reading notes for that one are in notes/reading/memgpt.md.",
            "Where are the reading notes on MemGPT?",
            "notes/reading/memgpt.md",
        ),
        F(
            "path",
            "tool",
            "results/kappa_round1.json",
            "saved results/kappa_round1.json",
            "Where were the first-round agreement results saved?",
            "results/kappa_round1.json",
        ),
        F(
            "path",
            "assistant",
            "templates/acl_natbib.bst",
            "The bibliography style is templates/acl_natbib.bst from the official template.",
            "Which bibliography style file is used?",
            "templates/acl_natbib.bst",
        ),
        F(
            "command",
            "assistant",
            "python scripts/fetch_arxiv.py --query 'context compression' --since 2022-01-01 "
            "--max 400",
            "The arXiv part of the search is\n```bash\npython scripts/fetch_arxiv.py --query "
            "'context compression' --since 2022-01-01 --max 400\n```",
            "Which command runs the arXiv part of the search?",
            "python scripts/fetch_arxiv.py --query 'context compression' --since 2022-01-01 "
            "--max 400",
        ),
        F(
            "command",
            "assistant",
            "latexmk -pdf -interaction=nonstopmode survey.tex",
            "Build with `latexmk -pdf -interaction=nonstopmode survey.tex` from the drafts folder.",
            "Which command builds the PDF?",
            "latexmk -pdf -interaction=nonstopmode survey.tex",
            "If the PDF looks stale, rerun `latexmk -pdf -interaction=nonstopmode survey.tex`.",
        ),
        F(
            "command",
            "user",
            "bibtool -s -d -i refs/raw.bib -o refs/clean.bib",
            "I usually clean the export with `bibtool -s -d -i refs/raw.bib -o refs/clean.bib`.",
            "Which command cleans the bibliography export?",
            "bibtool -s -d -i refs/raw.bib -o refs/clean.bib",
        ),
        F(
            "command",
            "assistant",
            "pandoc notes/outline.md -o outline.docx --citeproc --bibliography refs/clean.bib",
            "For your supervisor, a Word version:\n```bash\npandoc "
            "notes/outline.md -o outline.docx "
            "--citeproc --bibliography refs/clean.bib\n```",
            "Which command converts the outline to Word?",
            "pandoc notes/outline.md -o outline.docx --citeproc --bibliography refs/clean.bib",
        ),
        F(
            "command",
            "assistant",
            "rg -il 'summari[sz]ation' notes/reading | wc -l",
            "Quick count of notes that mention it: `rg -il "
            "'summari[sz]ation' notes/reading | wc -l`.",
            "Which command counts reading notes that mention summarization?",
            "rg -il 'summari[sz]ation' notes/reading | wc -l",
        ),
        F(
            "command",
            "user",
            "python -m screening.agree --stage abstract --raters A B",
            "Agreement is computed with `python -m screening.agree --stage abstract --raters A B`.",
            "Which command computes the agreement?",
            "python -m screening.agree --stage abstract --raters A B",
            "Rerun `python -m screening.agree --stage abstract --raters A B` after the fixes.",
        ),
        F(
            "command",
            "assistant",
            "jupyter nbconvert --execute analysis/meta.ipynb --to html",
            "The tables are regenerated with `jupyter nbconvert --execute analysis/meta.ipynb --to "
            "html`.",
            "Which command regenerates the tables?",
            "jupyter nbconvert --execute analysis/meta.ipynb --to html",
        ),
        F(
            "command",
            "user",
            "git tag -a workshop-v1 -m 'workshop submission'",
            "When we submit, tag it: `git tag -a workshop-v1 -m 'workshop submission'`.",
            "Which command tags the submitted version?",
            "git tag -a workshop-v1 -m 'workshop submission'",
        ),
        F(
            "command",
            "assistant",
            "python scripts/snowball.py --seeds data/seeds.txt --depth 1",
            "Snowballing from the seed papers: `python scripts/snowball.py --seeds data/seeds.txt "
            "--depth 1`.",
            "Which command runs the snowballing?",
            "python scripts/snowball.py --seeds data/seeds.txt --depth 1",
        ),
        F(
            "name",
            "user",
            supervisor,
            f"My supervisor, Prof. {supervisor}, wants to see the taxonomy first.",
            "Who is the supervisor?",
            supervisor,
            f"I'll send the taxonomy to {supervisor} tonight.",
        ),
        F(
            "name",
            "user",
            rater,
            f"The second rater is {rater}, he screens in the evenings.",
            "Who is the second rater?",
            rater,
        ),
        F(
            "name",
            "assistant",
            collection,
            f"Everything is in the Zotero collection {collection}.",
            "Which Zotero collection holds the papers?",
            collection,
            f"I moved the new preprints into {collection} as well.",
        ),
        F(
            "name",
            "assistant",
            "RecallBench-1k",
            "The planted-fact benchmark most of them use is RecallBench-1k.",
            "Which planted-fact benchmark do most papers use?",
            "RecallBench-1k",
        ),
        F(
            "name",
            "user",
            "LCM-W 2026",
            "The target venue is the LCM-W 2026 workshop on long-context models.",
            "What is the target venue?",
            "LCM-W 2026",
            "The LCM-W 2026 deadline is what drives the schedule.",
        ),
        F(
            "name",
            "assistant",
            "Type-R",
            "In the taxonomy, retrieval-based methods are labelled Type-R.",
            "Which label do retrieval-based methods get in the taxonomy?",
            "Type-R",
        ),
        F(
            "name",
            "assistant",
            "gpt-4o-mini-2024-07-18",
            "The judge model is pinned to gpt-4o-mini-2024-07-18 so results stay comparable.",
            "Which judge model version is pinned?",
            "gpt-4o-mini-2024-07-18",
        ),
        F(
            "name",
            "user",
            "sleepy-otter",
            "The cluster project for the replication is called sleepy-otter.",
            "What is the cluster project for the replication called?",
            "sleepy-otter",
        ),
        F(
            "name",
            "assistant",
            "wang2024mem",
            "The citation key of the memory benchmark paper is wang2024mem.",
            "What is the citation key of the memory benchmark paper?",
            "wang2024mem",
        ),
        F(
            "decision",
            "user",
            "exclude papers that release neither code nor prompts",
            "Decision: we exclude papers that release neither code nor prompts, because we cannot "
            "check their compression ratios.",
            "What happens to papers that release neither code nor prompts?",
            "exclude",
            "Remember, we exclude papers that release neither code nor prompts.",
        ),
        F(
            "decision",
            "assistant",
            "report token-level compression ratios",
            "We agreed to report token-level compression ratios, not character-level ones, since "
            "all baselines count tokens.",
            "At which level are compression ratios reported?",
            "token-level",
        ),
        F(
            "decision",
            "user",
            "organize the taxonomy by what is kept",
            "Let's organize the taxonomy by what is kept, not by architecture.",
            "By what is the taxonomy organized?",
            "what is kept",
            "Since we organize the taxonomy by what is kept, hybrids need a primary category.",
        ),
        F(
            "decision",
            "assistant",
            f"start the inclusion window in {cutoff}",
            f"We start the inclusion window in {cutoff}; earlier work predates instruction-tuned "
            "models.",
            "In which year does the inclusion window start?",
            cutoff,
        ),
        F(
            "decision",
            "user",
            "use two raters only for the abstract stage",
            "We use two raters only for the abstract stage; full texts get one rater plus a "
            "sample check.",
            "For which stage are two raters used?",
            "abstract stage",
        ),
        F(
            "decision",
            "assistant",
            "write it with the ACL template",
            "Decided: we write it with the ACL template, because the workshop requires it.",
            "Which template is used for the paper?",
            "ACL template",
        ),
        F(
            "decision",
            "user",
            "use an LLM judge only after validating it by hand",
            "We use an LLM judge only after validating it by hand, no exceptions.",
            "Under which condition is the LLM judge used?",
            "after validating it by hand",
            "As agreed, we use an LLM judge only after validating it by hand.",
        ),
        F(
            "decision",
            "assistant",
            "move the replication study to the appendix",
            "We move the replication study to the appendix because of the page limit.",
            "Where does the replication study go?",
            "appendix",
        ),
        F(
            "decision",
            "user",
            "cite preprints only in their latest version",
            "We cite preprints only in their latest version and record the version number.",
            "Which version of preprints is cited?",
            "latest version",
        ),
    ]
