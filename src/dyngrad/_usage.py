"""The error a command-line user can fix (a missing script, a bad option value)."""
from __future__ import annotations


class UsageError(Exception):
    """An error the user can fix; printed as one line."""
