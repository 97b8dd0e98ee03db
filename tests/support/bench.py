"""Modules of bench/, loaded by file path (bench/ is not installed with pgrecall): scale_bench, web_bench and write_cost."""

import importlib.util
import sys
from pathlib import Path


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


scale_bench = _load("scale_bench")
web_bench = _load("web_bench")
write_cost = _load("write_cost")
