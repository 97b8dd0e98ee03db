"""The model in a fresh interpreter with the network closed: it loads, and leaves the environment alone."""


def test_the_model_loads_with_the_network_closed_and_leaves_the_environment_alone():
    import subprocess
    import sys

    script = """
import os, socket
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
before = dict(os.environ)
from pgrecall.embedders.embedding import new_embedder
vectors = new_embedder().embed_batch(["offline"])
assert vectors.shape == (1, 384), vectors.shape
added = {key for key in os.environ if key not in before}
assert not {key for key in added if key.startswith(("HF_", "TRANSFORMERS_"))}, added  # torch adds its own
print("ok")
"""
    env = {
        key: value for key, value in __import__("os").environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))
    }
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
