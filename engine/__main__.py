"""``python -m engine`` runs the command line, as the installed command runs it."""

from engine.cli import program

program()
