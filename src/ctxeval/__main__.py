"""``python -m ctxeval`` runs the command line."""

from ctxeval.cli import main

if __name__ == "__main__":
    main()
