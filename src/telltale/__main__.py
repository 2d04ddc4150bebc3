from telltale.cli.main import main

raise SystemExit(main())
