"""Offline models: a tiny random Qwen2 for tests and SmolLM2-135M-Instruct converted from a local GGUF."""
