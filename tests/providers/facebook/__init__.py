"""The facebook provider: its Graph stand-in and adapter tests."""
