"""The pipeline: runs checks in stage order under deadlines and streams events (``pipeline.run``).

Promise: this package's ``__init__`` imports nothing, so importing a module of
the package costs only that module.
"""
