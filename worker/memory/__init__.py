"""Memories, the side that writes: the folder's files (files), the writer that indexes before it
returns (writer), remember's door (door), the import (importer) and the history's writer (history_writer)."""
