"""``python -m commdoctor`` is the same as the ``commdoctor`` command."""

from commdoctor.cli import entry

if __name__ == "__main__":
    entry()
