"""Data: mGeNTE entries, loading and validation, splits, SFT/DPO builders, templated inputs."""
