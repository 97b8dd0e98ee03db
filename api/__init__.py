"""The read-only search side. It never imports pgrecall.worker."""

from pgrecall.api.search import Hit, Searcher, search

__all__ = ["Hit", "Searcher", "search"]
