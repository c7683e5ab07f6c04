"""Subcommands of the ``dyngrad`` command, one module each (see ``dyngrad/cli.py``)."""
