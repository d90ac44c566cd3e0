"""the generic signed webhook: its stand-in (``standin``) and its adapter tests."""
