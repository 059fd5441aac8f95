"""`python -m lazyx ...` and the `lazyx` console script."""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    from .cli import run
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
