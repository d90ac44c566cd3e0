"""YouTube adapter tests against the stand-in."""
