"""Pure parsers: text or JSON in, plain records out. No side effects, no torch."""
