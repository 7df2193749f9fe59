"""Errors a user can fix: each entry point prints them as one line and exits non-zero."""


class UserError(Exception):
    """A problem in the user's input (config, paths, model, ports), reported as one line."""
