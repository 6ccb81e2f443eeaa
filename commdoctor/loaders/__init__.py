"""Loaders turn files on disk into the facts checks read (the offline twin of commdoctor.probes).

Promise: no loader imports torch, rich or textual; each reads its inputs in
bounded memory and turns unreadable or malformed input into counted skips and
warnings on the facts it returns, never into an exception.
"""
