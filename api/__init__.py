"""The read-only search side. It never imports pgrecall.worker."""

from pgrecall.api.search import Document, Hit, Searcher, get_document, search

__all__ = ["Document", "Hit", "Searcher", "get_document", "search"]
