"""Text processing: tokenizers and sentence splitters. Pure, offline, no global state."""

from ctxeval.text.sentences import SentenceSplitter, get_splitter
from ctxeval.text.tokenize import RougeTokenizer, Tokenizer, UnicodeTokenizer, get_tokenizer

__all__ = [
    "RougeTokenizer",
    "SentenceSplitter",
    "Tokenizer",
    "UnicodeTokenizer",
    "get_splitter",
    "get_tokenizer",
]
