"""Loaders turn files on disk (dumps, saved stacks, records) into the facts checks read."""
