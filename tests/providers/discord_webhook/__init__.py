"""Discord incoming webhooks: its stand-in (``standin``) and its adapter tests."""
