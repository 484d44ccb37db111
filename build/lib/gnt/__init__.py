"""gnt-align."""
