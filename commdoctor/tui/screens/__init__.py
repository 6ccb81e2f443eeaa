"""Screens of the TUI: the main tabs, and the detail of a check, a finding or a rank."""
