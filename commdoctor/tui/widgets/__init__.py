"""Widgets of the TUI: each draws one part of ``RunState`` with the shared views and theme."""
