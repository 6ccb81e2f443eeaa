"""Loaders turn files on disk (logs, hook records, dumps) into the facts checks read.

Promise: standard library only, never raising on bad input.
"""
