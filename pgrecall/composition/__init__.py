"""Composition roots: modules that wire the read side (pgrecall.api) and the write side
(pgrecall.worker) together on purpose, like the CLI. memories: the Python memory API (it migrates,
then writes through the worker); evaluation and conversation_evaluation: `pgrecall eval` (it
indexes, then searches). Nothing below them imports them."""
