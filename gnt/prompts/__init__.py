"""The translation prompt grid shared by training and evaluation (SPEC §3)."""
