"""The translation prompt grid shared by training and evaluation (docs/prompt-grid.md)."""
