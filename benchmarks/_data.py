"""Deterministic benchmark data, shared by the benchmark scripts.

Everything comes from a seeded ``random.Random`` and from text shipped with CPython, so every
run of every script sees exactly the same records, offline:

- :func:`text_records`: realistic text-mode records. The prose is the CPython language reference
  (``pydoc_data.topics``) and the docstrings of ~120 standard-library modules: about 90,000
  words of English with a vocabulary of about 6,500 words, code samples, grammar and doctests
  removed. A retrieved chunk is a window of 100-140 consecutive words starting anywhere (as a
  fixed-size chunker cuts them, mid-sentence included), so chunks are distinct across records
  (but for coincidences: about 1.4% of 100,000 chunks).
  The ground truth is 1-3 sentences of the same text: about 40% copied from one of the retrieved
  chunks, 35% paraphrased (words replaced, dropped, inserted, swapped: ROUGE-L recall around the
  0.7 threshold) and 25% absent from every chunk.
- :func:`corpus_records`: the same shape of record, but as a retriever over a chunked corpus
  returns them: the prose is cut once into about 760 fixed chunks (:func:`corpus_chunks`) and
  every retrieved chunk is one of those, so the same chunk text appears in the results of many
  queries (on average in about 130 of 10,000 records).
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
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Corpus",
    "corpus",
    "corpus_chunks",
    "corpus_records",
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


@lru_cache(maxsize=4)
def corpus_chunks(chunk_words: tuple[int, int] = (100, 140)) -> tuple[tuple[int, int], ...]:
    """The corpus cut once, as a fixed-size chunker cuts it: consecutive, non-overlapping word
    ranges ``(begin, end)`` of ``chunk_words`` words each (lengths drawn from their own fixed
    seed, so every call and every record seed sees the same chunks). The last words, too few
    for a whole chunk, are left out. About 760 chunks at the default sizes."""
    total = len(corpus().words)
    rng = random.Random(0)
    spans: list[tuple[int, int]] = []
    begin = 0
    while begin + (length := rng.randint(*chunk_words)) <= total:
        spans.append((begin, begin + length))
        begin += length
    return tuple(spans)


def corpus_records(
    n: int,
    *,
    seed: int = 0,
    chunks: int = 10,
    chunk_words: tuple[int, int] = (100, 140),
    truth: tuple[int, int] = (1, 3),
    kinds: tuple[float, float] = (0.4, 0.35),  # copied, paraphrased; the rest absent
    neighbours: float = 0.5,
    spread: int = 4,
) -> list[dict[str, Any]]:
    """``n`` records shaped like :func:`text_records`', whose retrieved chunks are ``chunks``
    distinct chunks of :func:`corpus_chunks`, so chunk texts repeat across records as they do
    when a retriever searches a fixed, chunked corpus.

    Each record is about one place in the corpus, its *anchor*: a chunk drawn uniformly from
    those that wholly contain a sentence of 5-40 words. Of its 1-3 ground-truth sentences, about
    40% are copied and 35% paraphrased (:func:`_paraphrase`) from a sentence lying wholly inside
    a *host* chunk, which is retrieved: the first host is the anchor, further ones are other
    chunks within ``spread`` chunks of it (evidence for one question tends to sit in one
    section), so a copied sentence is a substring of a retrieved chunk. The remaining 25% are
    sentences that overlap no retrieved chunk (the retriever missed them).

    The other retrieved chunks are, each with probability ``neighbours``, a chunk within
    ``spread`` chunks of the anchor, else any chunk of the corpus. Neighbours stand for what a
    retriever ranks next to the right passage: text from the same section, sharing its
    vocabulary, so near misses for a ROUGE-L threshold. Random chunks stand for retrieval
    noise. Anchors and random chunks are uniform, so chunk popularity is nearly flat; real
    query logs favour some chunks, which would repeat even more. Hosts and others are shuffled,
    so relevant chunks sit at random ranks, as in :func:`text_records`.

    Records share the chunk ``str`` objects; round-trip them through JSON to get the fresh
    objects a file reader would give.
    """
    c = corpus()
    spans = corpus_chunks(chunk_words)
    pool = len(spans)
    if chunks > pool or truth[1] > chunks:
        raise ValueError(f"need chunks <= {pool} and truth[1] <= chunks, got {chunks}, {truth}")
    texts = [" ".join(c.words[begin:end]) for begin, end in spans]
    begins = [begin for begin, _ in spans]

    def chunk_of(word: int) -> int:
        """Index of the chunk holding a word; ``pool`` for the words after the last chunk."""
        i = bisect_right(begins, word) - 1
        return i if word < spans[i][1] else pool

    candidates = [i for i in range(c.sentences) if 5 <= c.sentence(i)[1] - c.sentence(i)[0] <= 40]
    inside: list[list[int]] = [[] for _ in range(pool)]
    for i in candidates:
        s_begin, s_end = c.sentence(i)
        host = chunk_of(s_begin)
        if host < pool and chunk_of(s_end - 1) == host:
            inside[host].append(i)
    hostable = [i for i in range(pool) if inside[i]]
    rng = random.Random(seed)

    def near(anchor: int) -> int:
        return min(max(anchor + rng.randint(-spread, spread), 0), pool - 1)

    records = []
    for q in range(n):
        rolls = [rng.random() for _ in range(rng.randint(*truth))]
        anchor = rng.choice(hostable)
        hosts: list[int] = []
        ground_truth: list[str | None] = []
        for roll in rolls:
            if roll >= kinds[0] + kinds[1]:
                ground_truth.append(None)  # absent: drawn once the retrieved chunks are known
                continue
            host = anchor
            for _ in range(20):
                if host not in hosts and inside[host]:
                    break
                host = near(anchor)
            else:
                host = rng.choice([h for h in hostable if h not in hosts])
            hosts.append(host)
            s_begin, s_end = c.sentence(rng.choice(inside[host]))
            sentence = list(c.words[s_begin:s_end])
            if roll >= kinds[0]:
                sentence = _paraphrase(sentence, rng, c.vocabulary)
            ground_truth.append(" ".join(sentence))
        retrieved = list(hosts)
        while len(retrieved) < chunks:
            other = near(anchor) if rng.random() < neighbours else rng.randrange(pool)
            if other not in retrieved:
                retrieved.append(other)
        rng.shuffle(retrieved)
        taken = set(retrieved)
        for j, text in enumerate(ground_truth):
            while text is None:
                s_begin, s_end = c.sentence(rng.choice(candidates))
                if chunk_of(s_begin) not in taken and chunk_of(s_end - 1) not in taken:
                    text = ground_truth[j] = " ".join(c.words[s_begin:s_end])
        records.append(
            {
                "id": f"q{q}",
                "retrieved_context": [texts[i] for i in retrieved],
                # no duplicates, as in text_records (continuous-eval's NDCG ideal counts them)
                "ground_truth_context": list(dict.fromkeys(t for t in ground_truth if t)),
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
    """The commit of the checkout whose ``src/`` provides the ``ctxeval`` imported here (a tree
    on ``PYTHONPATH``, not necessarily this one), and whether its ``src/`` differs from it."""
    import importlib.util
    import subprocess

    spec = importlib.util.find_spec("ctxeval")
    origin = spec.origin if spec is not None and spec.origin else os.path.abspath(__file__)
    # .../src/ctxeval/__init__.py -> the checkout's root
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(origin))))
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


def print_profile(
    title: str,
    stages: list[tuple[str, float]],
    raw: dict[tuple[str, int, str], Any],
    top: int,
) -> None:
    """Print a cProfile breakdown: the stages' cumulative seconds and shares of the whole run
    (the first stage), then the ``top`` functions by own time. ``raw`` is ``pstats.Stats.stats``.
    """
    total = stages[0][1] or 1.0
    print(f"\n### {title}\n")
    print("cProfile inflates Python-level costs; shares are of the profiled run.\n")
    print("| stage | seconds | share |")
    print("|---|---:|---:|")
    for name, seconds in stages:
        print(f"| {name} | {seconds:.3f} | {seconds / total:.0%} |")
    print(f"\nTop {top} functions by own time:\n")
    print("| function | calls | own s | cumulative s |")
    print("|---|---:|---:|---:|")
    rows = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    for (path, line, name), (_, calls, own, cum, _) in rows:
        where = path.split("site-packages/")[-1].split("src/")[-1] if line else ""
        label = f"{where}:{line}({name})" if where else name
        print(f"| `{label}` | {calls} | {own:.3f} | {cum:.3f} |")
