"""``python -m ctxeval`` runs the command line."""

import sys

if __name__ == "__main__":
    try:
        from ctxeval.cli import main
    except KeyboardInterrupt:  # Ctrl-C while starting up: the same exit as during a run
        sys.stderr.write("ctxeval: interrupted\n")
        sys.exit(130)
    main()
