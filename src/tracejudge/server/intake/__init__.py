"""Trace intake: `POST /v1/traces` (`otlp`), OTLP/HTTP as the exporters and the Collector
send it, stored for scoring (`server/work/`) and the list (what the list shows of each
trace is `server/store/digest.py`).
"""
