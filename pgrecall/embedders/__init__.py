"""The embedding model: one interface (embedder_base), one instance per process and setting
(embedding), a backend per runtime (torch_embedder, onnx_embedder over onnx_model), and the model
folder's own files (model_layout, model_import)."""
