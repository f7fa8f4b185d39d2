"""Failures a user can cause and fix. The CLI prints them as one line and exits with 2;
anything else is a bug and keeps its traceback."""


class EdgebnnError(ValueError):
    """Base of every user-facing edgebnn error; the message names the culprit and the fix."""
