"""The wire model stands alone: `tracejudge.models` imports nothing of tracejudge but
`tracejudge.errors` (LAYOUT.md, rule 3), so the server, the report and any reader of
traces can load it without the client, the judges or tracing."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_models_loads_no_other_tracejudge_module() -> None:
    code = (
        "import json, sys\n"
        "import tracejudge.models\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'tracejudge')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout)
    assert "tracejudge.models" in loaded
    others = [
        name
        for name in loaded
        if name not in ("tracejudge", "tracejudge.errors")
        and not name.startswith("tracejudge.models")
    ]
    assert not others, f"import tracejudge.models also loaded {others}"


def test_evaluation_uses_the_wire_models_limits_and_tag_rules() -> None:
    from tracejudge import evaluation, models
    from tracejudge.evaluation import _validate

    assert _validate.MAX_CRITERION_LENGTH is models.MAX_CRITERION_LENGTH
    assert models.MAX_CRITERION_LENGTH == 4096
    assert models.MAX_TAG_LENGTH == 64
    assert evaluation.validate_tags is models.validate_tags
