"""Run by the published `composo` SDK's virtualenv (see _composo.py): its AsyncComposo
evaluates every trace of a JSON file against the given criteria on a server, at most
CONCURRENCY requests at once, and prints one JSON object: seconds, results, failures.

    python _composo_evaluate.py URL API_KEY TRACES_JSON CRITERIA_JSON CONCURRENCY

Imports only the composo package and its dependencies.
"""

import asyncio
import json
import sys
import time

from composo import AsyncComposo
from composo.models.api_types import MultiAgentTrace


async def main() -> None:
    url, key, traces_file, criteria, concurrency = sys.argv[1:6]
    with open(traces_file) as source:
        traces = [MultiAgentTrace.model_validate(t) for t in json.load(source)]
    criteria = json.loads(criteria)
    client = AsyncComposo(
        api_key=key, base_url=url, max_concurrent_requests=int(concurrency), num_retries=1
    )
    start = time.perf_counter()
    outcomes = await asyncio.gather(
        *(client.evaluate_trace(t, criteria=criteria) for t in traces), return_exceptions=True
    )
    seconds = time.perf_counter() - start
    await client.aclose()
    failures = [repr(o)[:300] for o in outcomes if isinstance(o, BaseException)]
    results = sum(len(o) for o in outcomes if isinstance(o, list))
    print(json.dumps({"seconds": seconds, "results": results, "failures": failures}))


asyncio.run(main())
