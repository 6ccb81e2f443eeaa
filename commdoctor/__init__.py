"""commdoctor: diagnostics for PyTorch distributed communication.

Importing the package is cheap and side-effect free: no torch, no rich.
"""

__version__ = "0.1.0"
