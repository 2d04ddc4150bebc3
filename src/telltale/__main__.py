"""``python -m telltale``."""

from telltale.cli.main import main

if __name__ == "__main__":  # a worker process importing this module must not run the CLI
    raise SystemExit(main())
