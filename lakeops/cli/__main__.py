"""``python -m lakeops.cli``: the same as the ``lakeops`` command."""

from lakeops.cli.main import main

if __name__ == "__main__":
    main()
