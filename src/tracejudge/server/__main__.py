"""`python -m tracejudge.server [flags]`: the same as `tracejudge serve`."""

from tracejudge.server.main import main

raise SystemExit(main())
