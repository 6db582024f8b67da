"""`python -m tracejudge.cli`: the `tracejudge` command."""

import sys

from tracejudge.cli import main

sys.exit(main())
