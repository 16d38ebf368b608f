"""The ``lancelet history``: to be written."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
