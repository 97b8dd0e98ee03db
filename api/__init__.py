"""The read-only search side, and the memory write path for Python callers.

Importing it loads neither the worker nor the queue: remember() and the other
memory functions import the write path on their first call (pgrecall.api.memories).
"""

from pgrecall.api.memories import forget, list_memories, remember, update_memory
from pgrecall.api.search import Document, Hit, Searcher, get_document, search

__all__ = [
    "Document",
    "Hit",
    "Searcher",
    "forget",
    "get_document",
    "list_memories",
    "remember",
    "search",
    "update_memory",
]
