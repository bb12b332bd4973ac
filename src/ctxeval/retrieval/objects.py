"""Users' retrievers as they are: a function, a LangChain retriever, a llama-index retriever.

:func:`retriever_function` turns any of them into ``question -> list of hits``, and
:func:`hit_text` / :func:`hit_id` read a hit as a text or an id:

- a function ``question -> list`` of texts or ids (or of the objects below);
- anything with LangChain's ``invoke(question)`` returning ``Document`` s (``page_content``;
  the id from ``Document.id`` or ``metadata["id"]``), a retriever or any runnable chain;
- anything with llama-index's ``retrieve(question)`` returning ``NodeWithScore`` s (the node's
  ``get_content()`` and ``node_id``).

Nothing is imported from either library: the objects are read by what they offer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentTypeError, type_name

__all__ = ["hit_id", "hit_text", "retriever_function"]

ACCEPTED = (
    "a function question -> ranked texts or ids, a LangChain retriever (or any object with "
    "invoke(question)), or a llama-index retriever (retrieve(question))"
)


def retriever_function(retriever: object, owner: str) -> Callable[[str], Any]:
    """``question -> hits`` for ``retriever``, or one error saying what is accepted."""
    invoke = getattr(retriever, "invoke", None)
    if callable(invoke):
        return invoke  # type: ignore[no-any-return]
    retrieve = getattr(retriever, "retrieve", None)
    if callable(retrieve):
        return retrieve  # type: ignore[no-any-return]
    if callable(retriever):
        return retriever
    raise InvalidArgumentTypeError(f"{owner}: got {type_name(retriever)}; give {ACCEPTED}")


def hit_text(hit: object) -> object:
    """A hit as a text: a string, a LangChain ``Document``'s ``page_content``, a llama-index
    node's ``get_content()``; anything else as it is (the record's checks name it)."""
    if isinstance(hit, str):
        return hit
    content = getattr(hit, "page_content", None)
    if isinstance(content, str):
        return content
    get_content = getattr(hit, "get_content", None)
    if callable(get_content):
        return get_content()
    return hit


def hit_id(hit: object) -> object:
    """A hit as an id: a string, a LangChain ``Document``'s ``id`` (or ``metadata["id"]``), a
    llama-index node's ``node_id``; anything else as it is (the record's checks name it)."""
    if isinstance(hit, str):
        return hit
    if hasattr(hit, "page_content"):
        found = getattr(hit, "id", None)
        if found is None:
            found = (getattr(hit, "metadata", None) or {}).get("id")
        return hit if found is None else found
    node_id = getattr(hit, "node_id", None)
    return hit if node_id is None else node_id
