"""Memories, the side every interface shares: the notes and their format (notes), their versions
(versions), the export (export), what a write is asked (request) and the writer's protocol (client).
Writing them is pgrecall.worker.memory's; the Python API is pgrecall.composition.memories."""
