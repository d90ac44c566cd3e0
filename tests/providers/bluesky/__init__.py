"""Bluesky: its stand-in (``standin``) and its adapter tests."""
