"""The read-only search side: search, get_document, Searcher, and list_memories (it reads the memory folder).

Importing it loads neither the worker nor the queue, and nothing here writes a
file or a row. The memory writes (remember, update_memory, forget) are
pgrecall.composition.memories.
"""

from pgrecall.api.searcher import Document, Hit, Searcher, get_document, search
from pgrecall.memory.notes import list_memories

__all__ = [
    "Document",
    "Hit",
    "Searcher",
    "get_document",
    "list_memories",
    "search",
]
