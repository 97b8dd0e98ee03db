"""bench/scale_bench.py, loaded as the module `scale_bench` (bench/ is no package)."""

import importlib.util
import sys
from pathlib import Path


def _load():
    path = Path(__file__).resolve().parents[2] / "bench" / "scale_bench.py"
    spec = importlib.util.spec_from_file_location("scale_bench", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["scale_bench"] = module
    spec.loader.exec_module(module)
    return module


scale_bench = sys.modules.get("scale_bench") or _load()
