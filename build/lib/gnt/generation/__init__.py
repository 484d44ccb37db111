"""Generation backends behind one interface: transformers (CPU/small GPU), vLLM (GPU), OpenAI-compatible HTTP."""
