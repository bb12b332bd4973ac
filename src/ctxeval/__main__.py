"""``python -m ctxeval`` runs the command line."""

from ctxeval.cli import main

main()
