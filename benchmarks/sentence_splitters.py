"""Compare offline sentence splitters on a hand-written gold set, and time them.

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/sentence_splitters.py            # everything
    PYTHONPATH=src .venv/bin/python benchmarks/sentence_splitters.py --errors   # + every miss

Quality: for every case, exact match of the whole split, and boundary precision/recall/F1
(micro-averaged over cases). A boundary is a position in the text with all whitespace removed,
so a splitter is not penalised for where it puts the whitespace between two sentences.
Speed: sentences per second over a few thousand realistic chunks, and the cost of the first
call in a fresh interpreter (import + model load + one split).

nltk's Punkt is included only when its punkt_tab data is already installed; this script never
downloads anything. Results and the decision they support are in docs/sentence-splitting.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxeval.text.sentences import (
    NupunktSplitter,
    PunktSplitter,
    SentencexSplitter,
)

# (text, expected sentences). The gold follows one convention: a sentence ends at . ! ? (and
# their equivalents in other scripts), after any closing quotes or brackets; an abbreviation,
# initial, decimal, version, URL or e-mail address is not an end unless a new sentence really
# starts after it; a heading, list item or paragraph on its own line is a sentence even without
# punctuation; a single line break inside running prose (hard wrap) is not a boundary.
ENGLISH: list[tuple[str, list[str]]] = [
    # abbreviations
    ("Dr. Smith arrived at noon. He was late.", ["Dr. Smith arrived at noon.", "He was late."]),
    (
        "Mr. and Mrs. Jones live next door. They are nice.",
        ["Mr. and Mrs. Jones live next door.", "They are nice."],
    ),
    (
        "Many fruits, e.g. apples and pears, are sweet. Others are sour.",
        ["Many fruits, e.g. apples and pears, are sweet.", "Others are sour."],
    ),
    (
        "Use a strong key, i.e. one with 32 bytes. Rotate it yearly.",
        ["Use a strong key, i.e. one with 32 bytes.", "Rotate it yearly."],
    ),
    (
        "She moved to the U.S. in 2010. Her brother stayed.",
        ["She moved to the U.S. in 2010.", "Her brother stayed."],
    ),
    (
        "He lives in the U.S. He works in New York.",
        ["He lives in the U.S.", "He works in New York."],
    ),
    (
        "Bring pens, paper, etc. to the exam. Do not be late.",
        ["Bring pens, paper, etc. to the exam.", "Do not be late."],
    ),
    (
        "We bought apples, pears, etc. The shop closed after that.",
        ["We bought apples, pears, etc.", "The shop closed after that."],
    ),
    (
        "Acme Inc. reported strong earnings. Shares rose 5%.",
        ["Acme Inc. reported strong earnings.", "Shares rose 5%."],
    ),
    (
        "See No. 5 on the list. It is the best one.",
        ["See No. 5 on the list.", "It is the best one."],
    ),
    (
        "As shown in Fig. 3, the loss decreases. Training then stops.",
        ["As shown in Fig. 3, the loss decreases.", "Training then stops."],
    ),
    (
        "Prof. Adams met Sen. Warren on Jan. 5. They discussed the budget.",
        ["Prof. Adams met Sen. Warren on Jan. 5.", "They discussed the budget."],
    ),
    (
        "The meeting is at 10 a.m. tomorrow. Please be on time.",
        ["The meeting is at 10 a.m. tomorrow.", "Please be on time."],
    ),
    (
        "He arrived at 5 p.m. The others came later.",
        ["He arrived at 5 p.m.", "The others came later."],
    ),
    (
        "St. Louis is in Missouri. It lies on the Mississippi.",
        ["St. Louis is in Missouri.", "It lies on the Mississippi."],
    ),
    (
        "Smith & Co. was founded in 1900. It makes tools.",
        ["Smith & Co. was founded in 1900.", "It makes tools."],
    ),
    (
        "The vote was 5 vs. 4 in favour. The law passed.",
        ["The vote was 5 vs. 4 in favour.", "The law passed."],
    ),
    (
        "Gen. Patton led the army. Lt. Col. Smith followed him.",
        ["Gen. Patton led the army.", "Lt. Col. Smith followed him."],
    ),
    (
        "The results (cf. Table 2) are clear. We discuss them below.",
        ["The results (cf. Table 2) are clear.", "We discuss them below."],
    ),
    (
        "See p. 42 for details. The appendix has more.",
        ["See p. 42 for details.", "The appendix has more."],
    ),
    (
        "Ph.D. students must register by Friday. Late forms are rejected.",
        ["Ph.D. students must register by Friday.", "Late forms are rejected."],
    ),
    ("Approx. 40 people came. Most stayed late.", ["Approx. 40 people came.", "Most stayed late."]),
    (
        "Dr. Watson, Mrs. Hudson and Mr. Holmes lived on Baker St. in London. They were friends.",
        [
            "Dr. Watson, Mrs. Hudson and Mr. Holmes lived on Baker St. in London.",
            "They were friends.",
        ],
    ),
    ("The U.S.A. is large. Canada is larger.", ["The U.S.A. is large.", "Canada is larger."]),
    (
        "Born in 1950 (d. 2010), he wrote ten books. All sold well.",
        ["Born in 1950 (d. 2010), he wrote ten books.", "All sold well."],
    ),
    # decimals and numbers
    ("Pi is about 3.14. It is irrational.", ["Pi is about 3.14.", "It is irrational."]),
    (
        "The coffee costs $2.50 today. Yesterday it was $2.25.",
        ["The coffee costs $2.50 today.", "Yesterday it was $2.25."],
    ),
    (
        "Accuracy rose from 0.85 to 0.91. The change is significant.",
        ["Accuracy rose from 0.85 to 0.91.", "The change is significant."],
    ),
    (
        "The rate is 4.5% per year. It was 3.9% last year.",
        ["The rate is 4.5% per year.", "It was 3.9% last year."],
    ),
    ("Temperatures hit 40°C. Stay inside.", ["Temperatures hit 40°C.", "Stay inside."]),
    ("Call me at 555-1234. I will answer.", ["Call me at 555-1234.", "I will answer."]),
    # initials
    (
        "J. R. R. Tolkien wrote The Hobbit. It was published in 1937.",
        ["J. R. R. Tolkien wrote The Hobbit.", "It was published in 1937."],
    ),
    (
        "The paper by A. Smith and B. Jones is cited often. It appeared in 2001.",
        ["The paper by A. Smith and B. Jones is cited often.", "It appeared in 2001."],
    ),
    (
        "George W. Bush was president. He served two terms.",
        ["George W. Bush was president.", "He served two terms."],
    ),
    (
        "Written by T. S. Eliot, the poem is long. Readers love it.",
        ["Written by T. S. Eliot, the poem is long.", "Readers love it."],
    ),
    # ellipses
    ("I wonder... Maybe not. Let us go.", ["I wonder...", "Maybe not.", "Let us go."]),
    (
        "He paused... and then continued. Nobody spoke.",
        ["He paused... and then continued.", "Nobody spoke."],
    ),
    ("Wait for it… The show begins now.", ["Wait for it…", "The show begins now."]),
    # quotes and parentheses
    ('"He left." She stayed.', ['"He left."', "She stayed."]),
    (
        '"Are you coming?" she asked. I said no.',
        ['"Are you coming?" she asked.', "I said no."],
    ),
    (
        "He said, \u201cIt is over.\u201d Then he left.",
        ["He said, \u201cIt is over.\u201d", "Then he left."],
    ),
    (
        "(This is a parenthetical sentence.) The next one follows.",
        ["(This is a parenthetical sentence.)", "The next one follows."],
    ),
    (
        "The value is high (about 90%). The rest is noise.",
        ["The value is high (about 90%).", "The rest is noise."],
    ),
    (
        "She shouted 'Stop!' and ran. Nobody followed.",
        ["She shouted 'Stop!' and ran.", "Nobody followed."],
    ),
    ("'Really?' he asked. 'Yes,' she said.", ["'Really?' he asked.", "'Yes,' she said."]),
    # questions and exclamations
    ("What time is it? It is late! Go home.", ["What time is it?", "It is late!", "Go home."]),
    ("Is this real?! I cannot believe it.", ["Is this real?!", "I cannot believe it."]),
    ("One. Two. Three.", ["One.", "Two.", "Three."]),
    # lists, bullets, paragraphs and line breaks
    (
        "Steps:\n1. Install the package.\n2. Run the tests.\n3. Read the docs.",
        ["Steps:", "1. Install the package.", "2. Run the tests.", "3. Read the docs."],
    ),
    (
        "Features:\n- Fast\n- Offline\n- Deterministic",
        ["Features:", "- Fast", "- Offline", "- Deterministic"],
    ),
    (
        "* First item\n* Second item\n* Third item",
        ["* First item", "* Second item", "* Third item"],
    ),
    (
        "Paragraph one ends here.\n\nParagraph two starts here.",
        ["Paragraph one ends here.", "Paragraph two starts here."],
    ),
    (
        "First paragraph without a period\n\nSecond paragraph without one either",
        ["First paragraph without a period", "Second paragraph without one either"],
    ),
    (
        "This sentence is wrapped\nacross two lines. The next one is not.",
        ["This sentence is wrapped\nacross two lines.", "The next one is not."],
    ),
    # URLs, e-mail addresses, file names
    (
        "Visit https://example.com/docs/index.html for details. It is free.",
        ["Visit https://example.com/docs/index.html for details.", "It is free."],
    ),
    (
        "Email john.doe@example.com for help. We answer quickly.",
        ["Email john.doe@example.com for help.", "We answer quickly."],
    ),
    (
        "The site www.python.org has the docs. Read them.",
        ["The site www.python.org has the docs.", "Read them."],
    ),
    ("Go to example.com. Then sign up.", ["Go to example.com.", "Then sign up."]),
    (
        "The file config.yaml is read first. Then defaults apply.",
        ["The file config.yaml is read first.", "Then defaults apply."],
    ),
    # version numbers
    (
        "Python 3.11.7 is installed. Upgrade to 3.12 later.",
        ["Python 3.11.7 is installed.", "Upgrade to 3.12 later."],
    ),
    ("We use v2.1.0 of the API. It is stable.", ["We use v2.1.0 of the API.", "It is stable."]),
    (
        "Section 4.2.1 covers this. Section 5 does not.",
        ["Section 4.2.1 covers this.", "Section 5 does not."],
    ),
    # headings without punctuation
    (
        "Introduction\nThis paper studies retrieval. We propose a metric.",
        ["Introduction", "This paper studies retrieval.", "We propose a metric."],
    ),
    (
        "# Installation\nRun pip install ctxeval. It takes a minute.",
        ["# Installation", "Run pip install ctxeval.", "It takes a minute."],
    ),
    (
        "Results and Discussion\n\nThe model wins on every dataset.",
        ["Results and Discussion", "The model wins on every dataset."],
    ),
    ("Chapter 1\nIt was a dark night.", ["Chapter 1", "It was a dark night."]),
    # miscellaneous
    ("No sentence-final punctuation here", ["No sentence-final punctuation here"]),
    (
        "the first sentence is lowercase. another one follows.",
        ["the first sentence is lowercase.", "another one follows."],
    ),
    (
        "Q: What is RAG? A: Retrieval-augmented generation.",
        ["Q: What is RAG?", "A: Retrieval-augmented generation."],
    ),
    (
        "He scored 9/10 on the test. She scored 10/10.",
        ["He scored 9/10 on the test.", "She scored 10/10."],
    ),
    (
        "The term 'RAG' means retrieval-augmented generation. It is popular.",
        ["The term 'RAG' means retrieval-augmented generation.", "It is popular."],
    ),
    # added after a first run, to probe list and abbreviation handling further
    ("Note:\n1. Back up your data first.", ["Note:", "1. Back up your data first."]),
    (
        "The U.S. Army is big. It has many soldiers.",
        ["The U.S. Army is big.", "It has many soldiers."],
    ),
    (
        "He works at Apple Inc. The company is large.",
        ["He works at Apple Inc.", "The company is large."],
    ),
    ("It was 11 p.m. on Friday. Nobody came.", ["It was 11 p.m. on Friday.", "Nobody came."]),
    ("He said \u2018no.\u2019 Then he left.", ["He said \u2018no.\u2019", "Then he left."]),
    ("Tel. 555-0100 for support. Ask for Ann.", ["Tel. 555-0100 for support.", "Ask for Ann."]),
    (
        "There are two options: (1) retry, (2) abort. Pick one.",
        ["There are two options: (1) retry, (2) abort.", "Pick one."],
    ),
    ("Mt. Everest is tall. K2 is harder.", ["Mt. Everest is tall.", "K2 is harder."]),
    (
        "Smith et al. proposed it. Later work improved it.",
        ["Smith et al. proposed it.", "Later work improved it."],
    ),
    (
        "This was shown by Smith et al. Their method is fast.",
        ["This was shown by Smith et al.", "Their method is fast."],
    ),
]

# (ISO 639-1 code, nltk Punkt model name or None, text, expected sentences)
OTHER: list[tuple[str, str | None, str, list[str]]] = [
    (
        "de",
        "german",
        "Dr. Müller kam um 10 Uhr. Er war pünktlich.",
        ["Dr. Müller kam um 10 Uhr.", "Er war pünktlich."],
    ),
    (
        "de",
        "german",
        "Das kostet z. B. fünf Euro. Das ist günstig.",
        ["Das kostet z. B. fünf Euro.", "Das ist günstig."],
    ),
    (
        "de",
        "german",
        "Am 3. Oktober ist Feiertag. Die Geschäfte sind zu.",
        ["Am 3. Oktober ist Feiertag.", "Die Geschäfte sind zu."],
    ),
    ("de", "german", "Wie geht es dir? Mir geht es gut!", ["Wie geht es dir?", "Mir geht es gut!"]),
    (
        "de",
        "german",
        "Die Müller GmbH & Co. KG wächst schnell. Der Umsatz steigt.",
        ["Die Müller GmbH & Co. KG wächst schnell.", "Der Umsatz steigt."],
    ),
    (
        "fr",
        "french",
        "M. Dupont est arrivé hier. Il est fatigué.",
        ["M. Dupont est arrivé hier.", "Il est fatigué."],
    ),
    (
        "fr",
        "french",
        "Il a dit : « Je pars. » Puis il est parti.",
        ["Il a dit : « Je pars. »", "Puis il est parti."],
    ),
    (
        "fr",
        "french",
        "Quelle heure est-il ? Il est tard !",
        ["Quelle heure est-il ?", "Il est tard !"],
    ),
    (
        "fr",
        "french",
        "Le prix est de 3,50 €. C'est cher.",
        ["Le prix est de 3,50 €.", "C'est cher."],
    ),
    (
        "es",
        "spanish",
        "¿Dónde está la estación? Está cerca. ¡Qué bien!",
        ["¿Dónde está la estación?", "Está cerca.", "¡Qué bien!"],
    ),
    (
        "es",
        "spanish",
        "El Sr. García llegó tarde. La reunión empezó sin él.",
        ["El Sr. García llegó tarde.", "La reunión empezó sin él."],
    ),
    (
        "es",
        "spanish",
        "La Dra. López trabaja aquí. Es cardióloga.",
        ["La Dra. López trabaja aquí.", "Es cardióloga."],
    ),
    (
        "it",
        "italian",
        "Il sig. Rossi è arrivato. Ha portato il vino.",
        ["Il sig. Rossi è arrivato.", "Ha portato il vino."],
    ),
    (
        "pt",
        "portuguese",
        "O Sr. Silva chegou cedo. Ele trouxe café.",
        ["O Sr. Silva chegou cedo.", "Ele trouxe café."],
    ),
    (
        "ru",
        "russian",
        "Привет, мир. Как дела? Всё хорошо.",
        ["Привет, мир.", "Как дела?", "Всё хорошо."],
    ),
    (
        "ru",
        "russian",
        "В 1999 г. он переехал в Москву. Там он работал.",
        ["В 1999 г. он переехал в Москву.", "Там он работал."],
    ),
    (
        "ru",
        "russian",
        "А. С. Пушкин родился в Москве. Он великий поэт.",
        ["А. С. Пушкин родился в Москве.", "Он великий поэт."],
    ),
    (
        "ru",
        "russian",
        "Он купил яблоки, груши и т. д. Потом ушёл домой.",
        ["Он купил яблоки, груши и т. д.", "Потом ушёл домой."],
    ),
    ("zh", None, "你好。今天天气很好！你呢？", ["你好。", "今天天气很好！", "你呢？"]),
    ("zh", None, "我喜欢读书。他喜欢跑步。", ["我喜欢读书。", "他喜欢跑步。"]),
    ("zh", None, "价格是3.5元。很便宜。", ["价格是3.5元。", "很便宜。"]),
    ("zh", None, "他说：“我明天来。”然后他走了。", ["他说：“我明天来。”", "然后他走了。"]),
    ("ja", None, "今日は晴れです。明日は雨でしょう。", ["今日は晴れです。", "明日は雨でしょう。"]),
    ("ja", None, "本当ですか？はい、そうです！", ["本当ですか？", "はい、そうです！"]),
    (
        "ja",
        None,
        "「おはよう。」と彼は言った。私は答えた。",
        ["「おはよう。」と彼は言った。", "私は答えた。"],
    ),
    ("hi", None, "यह एक वाक्य है। यह दूसरा वाक्य है।", ["यह एक वाक्य है।", "यह दूसरा वाक्य है।"]),
    ("hi", None, "क्या आप आ रहे हैं? हाँ, मैं आ रहा हूँ।", ["क्या आप आ रहे हैं?", "हाँ, मैं आ रहा हूँ।"]),
    ("hi", None, "डॉ. शर्मा अस्पताल में हैं। वे व्यस्त हैं।", ["डॉ. शर्मा अस्पताल में हैं।", "वे व्यस्त हैं।"]),
    (
        "ar",
        None,
        "مرحبا بالعالم. كيف حالك؟ أنا بخير.",
        ["مرحبا بالعالم.", "كيف حالك؟", "أنا بخير."],
    ),
    ("ko", None, "안녕하세요. 만나서 반갑습니다.", ["안녕하세요.", "만나서 반갑습니다."]),
    ("el", "greek", "Τι κάνεις; Είμαι καλά.", ["Τι κάνεις;", "Είμαι καλά."]),
    (
        "nl",
        "dutch",
        "Dhr. Jansen woont in Amsterdam. Hij werkt bij de bank.",
        ["Dhr. Jansen woont in Amsterdam.", "Hij werkt bij de bank."],
    ),
    (
        "pl",
        "polish",
        "Prof. Nowak wykłada w Krakowie. Studenci go lubią.",
        ["Prof. Nowak wykłada w Krakowie.", "Studenci go lubią."],
    ),
    (
        "tr",
        "turkish",
        "Bugün hava çok güzel. Yarın yağmur yağacak mı?",
        ["Bugün hava çok güzel.", "Yarın yağmur yağacak mı?"],
    ),
    ("zh", None, "我用Python 3.11写代码。它很快。", ["我用Python 3.11写代码。", "它很快。"]),
    (
        "ja",
        None,
        "東京は日本の首都です。人口は約1400万人です。",
        ["東京は日本の首都です。", "人口は約1400万人です。"],
    ),
    ("ur", None, "یہ ایک جملہ ہے۔ یہ دوسرا ہے۔", ["یہ ایک جملہ ہے۔", "یہ دوسرا ہے۔"]),
    ("bn", None, "আমি ভাত খাই। তুমি কী খাও?", ["আমি ভাত খাই।", "তুমি কী খাও?"]),
    ("fa", None, "سلام. حال شما چطور است؟", ["سلام.", "حال شما چطور است؟"]),
]


# --------------------------------------------------------------------------------------------
# splitters under test: (text, iso language, punkt language) -> sentences


Split = Callable[[str, str, "str | None"], list[str]]


def _stripped(pieces: Sequence[str]) -> list[str]:
    return [s for p in pieces if (s := p.strip())]


def _nupunkt(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    return NupunktSplitter().split(text)


def _nupunkt_adaptive(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    import nupunkt

    return _stripped(nupunkt.sent_tokenize(text, adaptive=True))  # type: ignore[arg-type]


def _sentencex(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    return SentencexSplitter(lang).split(text)


def _sentencex_en(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    return SentencexSplitter("en").split(text)


def _punkt(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    # Languages without a Punkt model are scored with the English one, as nltk users would.
    return PunktSplitter(punkt_lang or "english").split(text)


_NAIVE = re.compile(r"(?<=[.!?。！？।؟])\s+|(?<=[。！？])|\n+")


def _regex(text: str, lang: str, punkt_lang: str | None) -> list[str]:
    return _stripped(_NAIVE.split(text))


def _punkt_available() -> bool:
    try:
        PunktSplitter()
    except ImportError:
        return False
    return True


def splitters() -> dict[str, Split]:
    found: dict[str, Split] = {
        "nupunkt": _nupunkt,
        "nupunkt adaptive": _nupunkt_adaptive,
        "sentencex (case language)": _sentencex,
        "sentencex (always 'en')": _sentencex_en,
        "regex baseline": _regex,
    }
    if _punkt_available():
        found["nltk punkt"] = _punkt
    return found


# --------------------------------------------------------------------------------------------
# scoring


def _boundaries(sentences: Sequence[str]) -> set[int]:
    """Ends of all sentences but the last, as offsets in the text with whitespace removed."""
    ends, offset = set(), 0
    for sentence in sentences[:-1]:
        offset += len("".join(sentence.split()))
        ends.add(offset)
    return ends


@dataclass
class Score:
    cases: int = 0
    exact: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, predicted: list[str], gold: list[str]) -> None:
        self.cases += 1
        self.exact += predicted == gold
        p, g = _boundaries(predicted), _boundaries(gold)
        self.tp += len(p & g)
        self.fp += len(p - g)
        self.fn += len(g - p)

    def row(self) -> tuple[str, str, str, str]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return (
            f"{self.exact}/{self.cases} ({self.exact / self.cases:.0%})",
            f"{precision:.3f}",
            f"{recall:.3f}",
            f"{f1:.3f}",
        )


def quality(split: Split, show_errors: bool, label: str) -> tuple[Score, Score]:
    english, other = Score(), Score()
    for text, gold in ENGLISH:
        predicted = split(text, "en", "english")
        english.add(predicted, gold)
        if show_errors and predicted != gold:
            print(f"  [{label}] en: {text!r}\n      got {predicted!r}")
    for lang, punkt_lang, text, gold in OTHER:
        predicted = split(text, lang, punkt_lang)
        other.add(predicted, gold)
        if show_errors and predicted != gold:
            print(f"  [{label}] {lang}: {text!r}\n      got {predicted!r}")
    return english, other


# --------------------------------------------------------------------------------------------
# speed


def speed_corpus(repeats: int) -> list[str]:
    """Chunks of realistic prose: each English gold text, plus a few multi-sentence paragraphs."""
    texts = [text for text, _ in ENGLISH]
    paragraphs = [" ".join(texts[i : i + 5]) for i in range(0, len(texts), 5)]
    return (texts + paragraphs) * repeats


def throughput(split: Split, chunks: list[str], rounds: int) -> tuple[float, int]:
    """Sentences per second (best of ``rounds``) splitting every chunk, one call per chunk."""
    split(chunks[0], "en", "english")  # model loaded outside the timing
    sentences = sum(len(split(chunk, "en", "english")) for chunk in chunks)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for chunk in chunks:
            split(chunk, "en", "english")
        best = min(best, time.perf_counter() - start)
    return sentences / best, sentences


SAMPLE = "Dr. Smith arrived. He was late."
COLD_START = {
    "nupunkt: import + model load + first split": (
        f"from nupunkt.models import load_default_model; load_default_model().tokenize({SAMPLE!r})"
    ),
    "sentencex: import + first split": f"import sentencex; sentencex.segment('en', {SAMPLE!r})",
    "nltk punkt: import + model load + first split": (
        f"from nltk.tokenize.punkt import PunktTokenizer; PunktTokenizer().tokenize({SAMPLE!r})"
    ),
    "for reference: import ctxeval.text.sentences (and the ctxeval package)": (
        "import ctxeval.text.sentences"
    ),
}


def cold_start(code: str, runs: int) -> float:
    """Median wall time of a fresh interpreter running ``code``, minus an empty interpreter."""

    def run(source: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", source], check=True)
        return time.perf_counter() - start

    baseline = statistics.median(run("pass") for _ in range(runs))
    return statistics.median(run(code) for _ in range(runs)) - baseline


# --------------------------------------------------------------------------------------------


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--errors", action="store_true", help="print every case a splitter misses")
    parser.add_argument("--repeats", type=int, default=25, help="copies of the speed corpus")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds (best is kept)")
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh interpreters per timing")
    args = parser.parse_args(argv)

    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(", ".join(f"{p} {_version(p)}" for p in ("nupunkt", "sentencex", "nltk")))
    print(f"{len(ENGLISH)} English cases, {len(OTHER)} non-English cases")
    found = splitters()
    if "nltk punkt" not in found:
        print("nltk punkt: skipped (punkt_tab data not installed; this script never downloads)")

    header = ["splitter", "exact", "precision", "recall", "F1"]
    english_rows, other_rows = [], []
    for label, split in found.items():
        english, other = quality(split, args.errors, label)
        english_rows.append((label, *english.row()))
        other_rows.append((label, *other.row()))
    print("\nEnglish\n" + _table(header, english_rows))
    print("\nOther languages\n" + _table(header, other_rows))

    chunks = speed_corpus(args.repeats)
    document = "\n\n".join(chunks[: len(chunks) // args.repeats] * 4)
    speed_rows = []
    for label, split in found.items():
        rate, sentences = throughput(split, chunks, args.rounds)
        doc_rate, doc_sentences = throughput(split, [document], args.rounds)
        speed_rows.append(
            (label, f"{rate:,.0f}", f"{sentences:,}", f"{doc_rate:,.0f}", f"{doc_sentences:,}")
        )
    print(
        f"\nThroughput, best of {args.rounds}: {len(chunks):,} chunks (one split call each), "
        f"and one document of {len(document):,} characters"
    )
    header = ["splitter", "chunks: sentences/s", "sentences", "document: sentences/s", "sentences"]
    print(_table(header, speed_rows))

    cold_rows = []
    for label, code in COLD_START.items():
        if label.startswith("nltk punkt") and "nltk punkt" not in found:
            continue
        seconds = cold_start(code, args.cold_runs)
        cold_rows.append((label, f"{seconds * 1000:,.0f} ms"))
    print(f"\nFirst call in a fresh interpreter (median of {args.cold_runs}, minus bare start-up)")
    print(_table(["what", "time"], cold_rows))


if __name__ == "__main__":
    main()
