"""Deterministic benchmark data, shared by the benchmark scripts.

Everything comes from a seeded ``random.Random`` and from text shipped with CPython, so every
run of every script sees exactly the same records, offline:

- :func:`text_records`: realistic text-mode records. The prose is the CPython language reference
  (``pydoc_data.topics``) and the docstrings of ~120 standard-library modules: about 90,000
  words of English with a vocabulary of about 6,500 words, code samples, grammar and doctests
  removed. A retrieved chunk is a window of 100-140 consecutive words starting anywhere (as a
  fixed-size chunker cuts them, mid-sentence included), so chunks are distinct across records.
  The ground truth is 1-3 sentences of the same text: about 40% copied from one of the retrieved
  chunks, 35% paraphrased (words replaced, dropped, inserted, swapped: ROUGE-L recall around the
  0.7 threshold) and 25% absent from every chunk.
- :func:`id_run`: an ID-mode run and qrels as plain dicts (pytrec_eval style), with float
  scores unique within a query (as real retrievers give) or, with ``ties=True``, rounded to one
  decimal so that most documents share their score with others.
- :func:`write_small_jsonl`: many small text records written to a JSONL file, for the memory
  benchmark.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Corpus",
    "corpus",
    "id_run",
    "machine",
    "text_records",
    "write_small_jsonl",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@dataclass(frozen=True)
class Corpus:
    """The prose as one stream of whitespace-separated words, and where each sentence starts."""

    words: tuple[str, ...]
    sentence_starts: tuple[int, ...]  # one more entry than sentences: the end
    vocabulary: tuple[str, ...]

    def sentence(self, i: int) -> tuple[int, int]:
        return self.sentence_starts[i], self.sentence_starts[i + 1]

    @property
    def sentences(self) -> int:
        return len(self.sentence_starts) - 1


# Standard-library modules whose docstrings add to the prose (skipped when not importable).
_DOC_MODULES = """
abc argparse ast asyncio base64 bisect bz2 calendar cmd codecs collections colorsys
concurrent.futures configparser contextlib copy csv dataclasses datetime decimal difflib dis
doctest email email.message enum filecmp fnmatch fractions ftplib functools getopt gettext glob
gzip hashlib heapq hmac html.parser http.client http.cookiejar http.server imaplib inspect io
ipaddress itertools json locale logging logging.handlers lzma mailbox math mimetypes
multiprocessing numbers operator optparse os pathlib pdb pickle pkgutil platform poplib pprint
profile pstats queue quopri random re reprlib sched secrets selectors shelve shlex shutil signal
smtplib socket socketserver sqlite3 ssl stat statistics string struct subprocess symtable
tarfile tempfile textwrap threading timeit tokenize trace traceback types typing unittest
unittest.mock urllib.parse urllib.request uuid warnings wave weakref xml.dom.minidom
xml.etree.ElementTree xml.sax zipfile zipimport zoneinfo
""".split()


def _prose_paragraphs(text: str) -> list[str]:
    """Paragraphs of running prose: no indented code, grammar, doctests, tables or headings."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if not lines or any(line.startswith((" ", "\t")) for line in lines):
            continue  # code samples, grammar productions, indented notes
        if any(set(line.strip()) <= set("*=-+|~^") for line in lines):
            continue  # headings and tables
        para = " ".join(line.strip() for line in lines)
        if "::=" in para or ">>>" in para or len(para.split()) < 8:
            continue
        if sum(ch.isalpha() or ch.isspace() for ch in para) < 0.9 * len(para):
            continue  # mostly symbols
        out.append(para)
    return out


def _docstrings() -> list[str]:
    import importlib
    import inspect

    docs: list[str] = []
    seen: set[str] = set()

    def add(obj: object) -> None:
        doc = inspect.getdoc(obj)
        if doc and doc not in seen:
            seen.add(doc)
            docs.append(doc)

    for name in _DOC_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        add(module)
        for attr in sorted(vars(module)):
            obj = vars(module)[attr]
            if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj):
                add(obj)
                for member in sorted(vars(obj)):
                    if not member.startswith("_") and inspect.isfunction(vars(obj)[member]):
                        add(vars(obj)[member])
            elif inspect.isfunction(obj):
                add(obj)
    return docs


@lru_cache(maxsize=1)
def corpus() -> Corpus:
    """The CPython language reference (pydoc_data.topics) and standard-library docstrings."""
    from pydoc_data.topics import topics

    words: list[str] = []
    starts: list[int] = []
    texts = [topics[key] for key in sorted(topics)] + _docstrings()
    for text in texts:
        for para in _prose_paragraphs(text):
            for sentence in _SENTENCE_END.split(para):
                tokens = sentence.split()
                if tokens:
                    starts.append(len(words))
                    words.extend(tokens)
    starts.append(len(words))
    vocabulary = sorted({w.strip(".,;:()\"'!?").lower() for w in words} - {""})
    return Corpus(tuple(words), tuple(starts), tuple(vocabulary))


def _paraphrase(words: list[str], rng: random.Random, vocabulary: tuple[str, ...]) -> list[str]:
    """Reword a sentence: each word may be replaced, dropped or followed by a new word; one
    adjacent pair may be swapped. Keeps at least three words."""
    out: list[str] = []
    for word in words:
        roll = rng.random()
        if roll < 0.12:
            out.append(rng.choice(vocabulary))
        elif roll < 0.20:
            continue
        else:
            out.append(word)
        if rng.random() < 0.06:
            out.append(rng.choice(vocabulary))
    if len(out) >= 2 and rng.random() < 0.5:
        j = rng.randrange(len(out) - 1)
        out[j], out[j + 1] = out[j + 1], out[j]
    return out if len(out) >= 3 else words


def text_records(
    n: int,
    *,
    seed: int = 0,
    chunks: int = 10,
    chunk_words: tuple[int, int] = (100, 140),
    truth: tuple[int, int] = (1, 3),
    kinds: tuple[float, float] = (0.4, 0.35),  # copied, paraphrased; the rest absent
) -> list[dict[str, Any]]:
    """``n`` records with continuous-eval's field names: ``id``, ``retrieved_context``,
    ``ground_truth_context``."""
    c = corpus()
    rng = random.Random(seed)
    total = len(c.words)
    candidates = [i for i in range(c.sentences) if 5 <= c.sentence(i)[1] - c.sentence(i)[0] <= 40]
    records = []
    for q in range(n):
        lengths = [rng.randint(*chunk_words) for _ in range(chunks)]
        starts = [rng.randrange(total - length) for length in lengths]
        ground_truth: list[str] = []
        hosts = rng.sample(range(chunks), truth[1])  # chunks that will hold copied sentences
        for j in range(rng.randint(*truth)):
            s_begin, s_end = c.sentence(rng.choice(candidates))
            sentence = list(c.words[s_begin:s_end])
            roll = rng.random()
            if roll < kinds[0] + kinds[1]:
                host = hosts[j]
                length = lengths[host] = max(lengths[host], s_end - s_begin)
                begin = s_begin - rng.randint(0, length - (s_end - s_begin))
                starts[host] = min(max(begin, 0), total - length)
                if roll >= kinds[0]:
                    sentence = _paraphrase(sentence, rng, c.vocabulary)
            ground_truth.append(" ".join(sentence))
        retrieved = [
            " ".join(c.words[start : start + length])
            for start, length in zip(starts, lengths, strict=True)
        ]
        records.append(
            {
                "id": f"q{q}",
                "retrieved_context": retrieved,
                # continuous-eval's NDCG ideal counts duplicate ground truth; ctxeval removes
                # duplicates, so the data has none (they are vanishingly rare anyway).
                "ground_truth_context": list(dict.fromkeys(ground_truth)),
            }
        )
    return records


def id_run(
    queries: int,
    docs_per_query: int,
    *,
    seed: int = 0,
    ties: bool = False,
    collection: int = 1_000_000,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """A run ``{qid: {docid: score}}`` and qrels ``{qid: {docid: grade}}``.

    Each query retrieves ``docs_per_query`` distinct documents from a collection of
    ``collection``; scores are floats, unique within a query unless ``ties`` (then rounded to
    one decimal: about ten distinct values per query). Each query has 1-20 judged documents,
    grades 0-3 with at least one positive; about half of the judged documents are retrieved,
    more often near the top, the others are not retrieved at all.
    """
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(queries):
        qid = f"q{q}"
        ids = [f"d{x}" for x in rng.sample(range(collection), docs_per_query + 20)]
        retrieved, others = ids[:docs_per_query], ids[docs_per_query:]
        scores = sorted((rng.uniform(0.0, 30.0) for _ in retrieved), reverse=True)
        if ties:
            scores = [round(s / 30.0, 1) for s in scores]
        elif len(set(scores)) < len(scores):  # practically never; keep the promise anyway
            scores = [s + i * 1e-9 for i, s in enumerate(scores)]
        run[qid] = dict(zip(retrieved, scores, strict=True))
        judged: dict[str, int] = {}
        for _ in range(rng.randint(1, 20)):
            if rng.random() < 0.5:
                # biased to the top: rank = floor(n * u^2)
                doc = retrieved[int(docs_per_query * rng.random() ** 2)]
            else:
                doc = others[rng.randrange(len(others))]
            judged[doc] = rng.choice((0, 1, 1, 2, 3))
        if not any(judged.values()):
            judged[next(iter(judged))] = 1
        qrels[qid] = judged
    return run, qrels


def write_small_jsonl(path: str | os.PathLike[str], n: int, *, seed: int = 0) -> int:
    """Write ``n`` small text records (5 chunks of 8-16 words, 1-2 ground-truth sentences);
    return the file size in bytes."""
    c = corpus()
    rng = random.Random(seed)
    total = len(c.words)
    words = c.words
    with open(path, "w", encoding="utf-8") as f:
        for q in range(n):
            retrieved = []
            for _ in range(5):
                length = rng.randint(8, 16)
                start = rng.randrange(total - length)
                retrieved.append(" ".join(words[start : start + length]))
            truth = []
            for _ in range(rng.randint(1, 2)):
                if rng.random() < 0.5:
                    chunk = rng.choice(retrieved).split()
                    truth.append(" ".join(chunk[: rng.randint(5, len(chunk))]))
                else:
                    start = rng.randrange(total - 10)
                    truth.append(" ".join(words[start : start + 10]))
            record = {
                "id": f"q{q}",
                "retrieved_context": retrieved,
                "ground_truth_context": list(dict.fromkeys(truth)),
            }
            f.write(json.dumps(record))
            f.write("\n")
    return os.path.getsize(path)


def machine() -> dict[str, str]:
    """CPU model, cores, Python and package versions, for the tables' headers."""
    import importlib.metadata
    import platform

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "cpu": f"{model}, {os.cpu_count()} logical cores",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    for dist in (
        "ctxeval",
        "continuous-eval",
        "rouge",
        "rouge-score",
        "rapidfuzz",
        "pytrec_eval-terrier",
        "ranx",
        "numba",
        "numpy",
        "pydantic",
    ):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            info[dist] = importlib.metadata.version(dist)
    return info


def source_revision() -> str:
    """The repository's commit, and whether ``src/`` differs from it."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    if not commit:
        return "unknown"
    return commit + (" + uncommitted changes in src/" if dirty else " (src/ clean)")


def print_machine() -> None:
    info = machine()
    print("machine: " + info.pop("cpu") + f"; Python {info.pop('python')}; {info.pop('platform')}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info.items()))
    print(f"ctxeval source: {source_revision()}")
