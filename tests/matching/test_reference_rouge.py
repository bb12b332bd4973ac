"""ctxeval's ROUGE-L against rouge-score itself: tokens and recall, bit for bit.

design.md: ROUGE-L recall "must equal rouge-score's
``RougeScorer(["rougeL"]).score(target=gt, prediction=retrieved).recall`` exactly with the
default tokenizer". Every expected value below comes from rouge-score, run in the test, or from
hand computation (for inputs too long for rouge-score's pure-Python LCS table).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nltk.stem import porter
from rouge_score import rouge_scorer, tokenizers
from rouge_score import tokenize as rouge_tokenize

from ctxeval import RougeChunkMatch, RougeTokenizer
from ctxeval.matching import rouge_l_recall_matrix
from ctxeval.matching.rouge import compiled
from ctxeval.matching.tokens import default_cache

# Characters whose lower-casing or category makes tokenizers disagree when done carelessly:
# 'İ'.lower() is 'i' + U+0307 (so "İstanbul" gives ["i", "stanbul"]), the Kelvin sign lowers to
# ASCII 'k', the Angstrom sign to 'å'; 'ſ' and ligatures stay non-ASCII under lower() (only
# casefold/NFKC would map them); non-ASCII digits are not [0-9].
TRICKY = (
    "İıKÅſßẞﬁﬀﬃǅΣσςŉǰ"  # case mappings that change length or land in ASCII
    "٣۵१１²½①"  # digits that are not [0-9]
    "\u0307\u0301\u200b\u00a0\u2028\u3000\t\n\r"  # combining marks, zero-width and odd spaces
    "'-_.,;:!?()[]{}\"«»—–…/\\@#$%^&*+=<>|~`"  # punctuation
    "AZaz09"  # the ASCII edges of [a-z0-9]
)

# Real English words that Porter stems (and some it leaves alone), and non-English words.
WORDS = (
    "running runs ran runner generalizations generalization caresses ponies ties caress cats "
    "agreed plastered motoring sing conflated troubled sized hopping tanned falling hissing "
    "fizzed failing filing happy sky dying lying dies relational conditional rational "
    "valency hesitancy digitizer conformability radically differently vileli analogousli "
    "vietnamization predication operator feudalism decisiveness hopefulness callousness "
    "formality sensitivity sensibility triplicate formative formalize electricity electrical "
    "hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible "
    "irritant replacement adjustment dependent adoption homologou communism activate "
    "angulariti homologous effective bowdlerize probate rate cease controll roll generously "
    "the a an of is was İstanbul naïve café Москва 東京 Ζεύς 2024 3rd covid-19 e-mail U.S.A."
).split()

SENTENCES = [
    "Paris is the capital of France and also the largest city in the country.",
    "The quick brown fox jumps over the lazy dog.",
    "The running dogs were running quickly; the runners ran faster!",
    "In 2023, GDP grew by 3.5% (according to the IMF's report).",
    "E-mail me at john.doe@example.com or visit https://example.com/a-b_c?d=1.",
    "İstanbul's population is about 15.5 million — Turkey's largest city.",
    "The temperature was 300 K (Kelvin sign: 300 K), i.e. about 27 °C.",
    "Ligatures: ﬁnancial oﬃce ﬂow; long s: ſtate; German: Straße, STRASSE.",
    "Москва — столица России, 東京は日本の首都です。",
    "Don't stop believin' — it's the U.S.A.'s 1st choice, isn't it?",
    "    leading and trailing whitespace\t\n",
    "",
    "...!!!???",
    "generalizations caresses ponies relational conditional hopefulness",
]

tricky_text = st.text(alphabet=st.sampled_from(TRICKY), max_size=40)
unicode_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=60)
word_text = st.lists(st.sampled_from(WORDS + list(TRICKY[-40:])), max_size=15).map(" ".join)
any_text = st.one_of(unicode_text, tricky_text, word_text, st.sampled_from(SENTENCES))

_STEMMER = porter.PorterStemmer()


@pytest.fixture(scope="module", autouse=True, params=["never", "always"], ids=["py", "compiled"])
def rouge_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs on both ROUGE-L paths: tokens and rapidfuzz in Python, and the
    compiled kernel (ctxeval.matching.rouge.compiled; the stemming tokenizer always takes the
    first).
    Module-scoped (hypothesis reruns a test's examples within one fixture value)."""
    with compiled_mode(request.param):
        if request.param == "always":
            assert compiled.status() in ("in use", "not loaded yet: loads with the first record")
        yield request.param


compiled_mode = compiled.mode


def reference_tokens(text: str, stem: bool) -> list[str]:
    return rouge_tokenize.tokenize(text, _STEMMER if stem else None)


# --------------------------------------------------------------------------------------------
# Tokenizer


@pytest.mark.parametrize("stem", [False, True])
@settings(max_examples=300)
@given(text=any_text)
def test_tokenizer_matches_rouge_score_on_generated_text(stem: bool, text: str) -> None:
    got = RougeTokenizer(stem=stem).tokenize(text)
    assert got == reference_tokens(text, stem)  # rouge_score.tokenize.tokenize
    assert got == tokenizers.DefaultTokenizer(use_stemmer=stem).tokenize(text)


@pytest.mark.parametrize("stem", [False, True])
@pytest.mark.parametrize("text", SENTENCES)
def test_tokenizer_matches_rouge_score_on_real_sentences(stem: bool, text: str) -> None:
    assert RougeTokenizer(stem=stem).tokenize(text) == tokenizers.DefaultTokenizer(
        use_stemmer=stem
    ).tokenize(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Hand-derived from rouge-score's rules (lower(), then [a-z0-9]+ runs).
        ("İstanbul", ["i", "stanbul"]),  # 'İ'.lower() == 'i\u0307'
        ("300\u212a", ["300k"]),  # KELVIN SIGN lowers to ASCII 'k'
        ("ﬁnal oﬃce", ["nal", "o", "ce"]),  # ligatures are not [a-z]
        ("٣ ١２ 42", ["42"]),  # only ASCII digits count
        ("ſtate", ["tate"]),  # LONG S is not 's' under lower()
    ],
)
def test_tokenizer_tricky_characters_by_hand(text: str, expected: list[str]) -> None:
    assert reference_tokens(text, False) == expected
    assert RougeTokenizer().tokenize(text) == expected


# --------------------------------------------------------------------------------------------
# ROUGE-L recall matrix

# A small vocabulary (with inflections, case variants and punctuation) so that texts overlap.
VOCAB = [
    "the",
    "The",
    "cat",
    "cats",
    "sat",
    "sitting",
    "on",
    "mat",
    "running",
    "runs",
    "dog",
    "DOG",
    "a",
    "1990",
    "İstanbul",
    "naïve",
    "fox",
    ",",
    ".",
    "!",
    "—",
]
overlapping_text = st.one_of(
    st.lists(st.sampled_from(VOCAB), max_size=12).map(" ".join),
    st.sampled_from(["", "   ", "...", "!?", "—", "Москва", "東京"]),
)
text_lists = st.lists(overlapping_text, max_size=6)


def reference_recall(retrieved: str, ground_truth: str, stem: bool) -> float:
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stem)
    return scorer.score(target=ground_truth, prediction=retrieved)["rougeL"].recall


def reference_matrix(retrieved: list[str], ground_truth: list[str], stem: bool) -> list[list]:
    return [[reference_recall(r, g, stem) for g in ground_truth] for r in retrieved]


@pytest.mark.parametrize("stem", [False, True])
@settings(max_examples=150)
@given(retrieved=text_lists, ground_truth=text_lists)
def test_recall_matrix_equals_rouge_score_exactly(
    stem: bool, retrieved: list[str], ground_truth: list[str]
) -> None:
    recall, _ = rouge_l_recall_matrix(retrieved, ground_truth, RougeTokenizer(stem=stem))
    assert recall.shape == (len(retrieved), len(ground_truth))
    # Exact (==): both divide the same two integers.
    assert recall.tolist() == reference_matrix(retrieved, ground_truth, stem)


THRESHOLDS = [0.0, 0.25, 1 / 3, 0.5, 0.7, 0.8, 1.0]


@pytest.mark.parametrize(("stem", "tokenizer"), [(False, "rouge"), (True, "rouge-stem")])
@settings(max_examples=100)
@given(retrieved=text_lists, ground_truth=text_lists)
def test_rouge_chunk_match_scores_and_relevance(
    stem: bool, tokenizer: str, retrieved: list[str], ground_truth: list[str]
) -> None:
    expected = reference_matrix(retrieved, ground_truth, stem)
    tokens = tokenizers.DefaultTokenizer(use_stemmer=stem).tokenize
    for threshold in THRESHOLDS:
        matches = RougeChunkMatch(threshold, tokenizer=tokenizer).match(retrieved, ground_truth)
        assert matches.scores is not None
        assert matches.scores.tolist() == expected
        # A text without tokens never matches, even at threshold 0 (where recall 0 passes).
        assert matches.relevant.tolist() == [
            [
                value >= threshold and bool(tokens(r)) and bool(tokens(g))
                for value, g in zip(row, ground_truth, strict=True)
            ]
            for row, r in zip(expected, retrieved, strict=True)
        ]


@pytest.mark.parametrize("stem", [False, True])
def test_tokenless_texts_are_reported(stem: bool) -> None:
    retrieved = ["", "...", "the cat", "Москва"]
    ground_truth = ["東京", "the cat", "   "]
    recall, tokenless = rouge_l_recall_matrix(retrieved, ground_truth, RougeTokenizer(stem=stem))
    assert recall.tolist() == reference_matrix(retrieved, ground_truth, stem)
    # Texts without a letter or digit ("", "   ", "...") have no words under any tokenizer:
    # only texts with letters that the tokenizer could not see are reported.
    assert sorted(tokenless) == sorted(["Москва", "東京"])


# --------------------------------------------------------------------------------------------
# Long chunks: continuous-eval's ROUGE scores them 0 (a swallowed RecursionError); ctxeval must not.

LONG_WORDS = 5_000


def long_chunk(n: int = LONG_WORDS, offset: int = 0) -> str:
    # A deterministic, repetitive but non-periodic text over a 503-word vocabulary.
    return " ".join(f"w{((i + offset) * 7919) % 503}" for i in range(n))


GT_SENTENCE = "The quick brown fox jumps over the lazy dog."


def test_long_chunk_matches_itself() -> None:
    text = long_chunk()
    recall, _ = rouge_l_recall_matrix([text], [text], RougeTokenizer())
    assert recall.tolist() == [[1.0]]  # LCS of a sequence with itself is its length
    assert RougeChunkMatch(1.0).match([text], [text]).relevant.tolist() == [[True]]


def test_long_chunk_containing_ground_truth_sentence() -> None:
    words = long_chunk().split()
    text = " ".join([*words[:2500], GT_SENTENCE, *words[2500:]])
    ground_truth = [GT_SENTENCE, "w0 w1 w2 unrelated", long_chunk(100)]
    matches = RougeChunkMatch().match([text], ground_truth)
    assert matches.scores is not None
    # rouge-score can afford a 5,000 x 9 LCS table: compare with it directly.
    assert matches.scores.tolist() == [[reference_recall(text, g, False) for g in ground_truth]]
    assert matches.scores[0, 0] == 1.0  # every gt token appears in order in the chunk
    assert matches.relevant[0, 0]


def test_long_chunk_recall_by_a_subsequence() -> None:
    # gt = the long chunk, retrieved = the same chunk with every 10th word dropped. The shorter
    # text is a subsequence of the longer, so LCS = its length (by hand, no reference needed).
    words = long_chunk().split()
    shorter = [w for i, w in enumerate(words) if i % 10 != 9]
    recall, _ = rouge_l_recall_matrix(
        [" ".join(shorter), " ".join(words)],
        [" ".join(words), " ".join(shorter)],
        RougeTokenizer(),
    )
    assert recall.tolist() == [[len(shorter) / len(words), 1.0], [1.0, 1.0]]


@settings(max_examples=5, suppress_health_check=[HealthCheck.too_slow])
@given(offset=st.integers(0, 10_000), cut=st.integers(0, LONG_WORDS))
def test_long_chunk_against_short_ground_truth(offset: int, cut: int) -> None:
    text = long_chunk(offset=offset)
    words = text.split()
    ground_truth = [" ".join(words[cut : cut + 12]), " ".join(reversed(words[cut : cut + 12]))]
    recall, _ = rouge_l_recall_matrix([text], ground_truth, RougeTokenizer())
    assert recall.tolist() == [[reference_recall(text, g, False) for g in ground_truth]]


def test_a_record_with_a_large_vocabulary() -> None:
    # 60,000 distinct tokens in one record (an earlier design stored token ids as code points,
    # which this crossed the surrogate range with). Scores must not change.
    tokenizer = RougeTokenizer()
    default_cache(tokenizer).clear()
    text = " ".join(f"t{i}" for i in range(60_000))
    window = [f"t{i}" for i in range(55_000, 58_000)]
    short = ["t57000 t1 t59990 t59999", "t55500 t56000 x y"]
    ground_truth = [" ".join(window), " ".join(reversed(window)), *short]
    recall, _ = rouge_l_recall_matrix([text], ground_truth, tokenizer)
    # By hand: the window in order is a subsequence of the text (recall 1); reversed, only one
    # of its tokens fits in a common subsequence (1/3000); LCS 3 of 4; LCS 2 of 4.
    assert recall.tolist() == [[1.0, 1 / 3000, 0.75, 0.5]]
    assert recall[0, 2:].tolist() == [reference_recall(text, g, False) for g in short]


@compiled_mode("never")  # the token cache is the Python path's
def test_a_repeated_record_with_a_large_vocabulary() -> None:
    # The same record twice: the second time its texts are encoded as one character per token,
    # 60,000 characters crossing the surrogate range, which the codes skip. Scores must not
    # change.
    tokenizer = RougeTokenizer()
    default_cache(tokenizer).clear()
    text = " ".join(f"t{i}" for i in range(60_000))
    window = [f"t{i}" for i in range(54_000, 58_000)]
    ground_truth = [" ".join(window), " ".join(reversed(window)), "t57000 t1 t59990 t59999"]
    first, _ = rouge_l_recall_matrix([text], ground_truth, tokenizer)
    assert text not in default_cache(tokenizer)._codes
    again, _ = rouge_l_recall_matrix([text], ground_truth, tokenizer)
    assert len(default_cache(tokenizer)._codes[text]) == 60_000
    assert first.tolist() == again.tolist() == [[1.0, 1 / 4000, 0.75]]


@settings(max_examples=30)
@given(
    chunks=st.lists(st.text(alphabet="ab cD-é1", max_size=30), min_size=1, max_size=4),
    truth=st.lists(st.text(alphabet="ab cD-é1", max_size=20), min_size=1, max_size=3),
)
@compiled_mode("never")  # the token cache's two forms are the Python path's
def test_keys_and_characters_agree_with_rouge_score(chunks: list[str], truth: list[str]) -> None:
    tokenizer = RougeTokenizer()
    default_cache(tokenizer).clear()
    first, _ = rouge_l_recall_matrix(chunks, truth, tokenizer)  # token keys
    again, _ = rouge_l_recall_matrix(chunks, truth, tokenizer)  # characters: all repeats
    expected = [[reference_recall(c, g, False) for g in truth] for c in chunks]
    assert first.tolist() == expected
    assert again.tolist() == expected
