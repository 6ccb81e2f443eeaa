"""Sinks: turn pipeline events and reports into text, JSON and HTML. They diagnose nothing."""
