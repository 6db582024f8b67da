"""`python -m tracejudge`: the `tracejudge` command."""

import sys

from tracejudge.cli import main

sys.exit(main())
