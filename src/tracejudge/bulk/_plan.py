"""The first pass of a bulk run: which traces each file holds, and the shards.

A trace's spans may be split over several files (a Collector's file exporter rotates
files while a trace is open), so every file is indexed first: its trace ids, each with
its spans' earliest start and the traces its spans link to. The driver then groups them as
`tracejudge score` does (linked traces are one trace, under the key of the first to
appear), and deals the groups into shards by a hash of their key, so that a shard's
traces are the same on every run of the same input and a resumed run skips the shards it
finished.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracejudge.convert import SpanRecord

__all__ = ["FileIndex", "Plan", "Shard", "index_file", "plan_shards"]


@dataclass
class FileIndex:
    """What one file holds: trace id -> (spans, earliest start in Unix ns, linked ids)."""

    uri: str
    traces: dict[str, tuple[int, int | None, tuple[str, ...]]] = field(default_factory=dict)
    #: MultiAgentTrace documents, by where they are in the file ("line 3").
    documents: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Seen:
    spans: int = 0
    start_ns: int | None = None
    links: list[str] = field(default_factory=list)

    def add(self, span: SpanRecord) -> None:
        self.spans += 1
        if span.start_ns is not None and (self.start_ns is None or span.start_ns < self.start_ns):
            self.start_ns = span.start_ns
        for linked, _ in span.links:
            if linked != span.trace_id and linked not in self.links:
                self.links.append(linked)


def index_file(uri: str) -> FileIndex:
    """Read `uri` once and index it (see `FileIndex`)."""
    from tracejudge.bulk._files import open_file
    from tracejudge.convert import read_otlp_batches

    index = FileIndex(uri)
    seen: dict[str, _Seen] = {}
    with open_file(uri) as stream:
        for batch in read_otlp_batches(stream):
            index.warnings.extend(f"{uri}: {w}" for w in batch.warnings)
            for span in batch.spans:
                seen.setdefault(span.trace_id, _Seen()).add(span)
            for trace_id, _span_id, _event in batch.events:
                seen.setdefault(trace_id, _Seen())
            index.documents.extend(where for where, _ in batch.documents)
    index.traces = {k: (v.spans, v.start_ns, tuple(v.links)) for k, v in seen.items()}
    return index


@dataclass(frozen=True)
class Shard:
    """One unit of work: the traces of a few files, scored by one task."""

    number: int
    #: file URI -> the trace ids (or document places) to take from it
    files: dict[str, tuple[str, ...]]
    #: trace id -> the key it is scored under (linked traces share their first's)
    keys: dict[str, str]
    #: key -> (the file it first appeared in, its earliest start in Unix ns)
    traces: dict[str, tuple[str, int | None]]


@dataclass(frozen=True)
class Plan:
    shards: list[Shard]
    traces: int
    #: (key, the files its spans came from) of every trace split over several files
    shared: list[tuple[str, list[str]]]
    warnings: list[str]

    def fingerprint(self, extra: object) -> str:
        """What identifies this run's work: its files, shards and `extra` (the criteria)."""
        body = json.dumps(
            [[sorted(s.files.items()), sorted(s.keys.items())] for s in self.shards]
            + [repr(extra)],
            default=list,
        )
        return hashlib.sha256(body.encode()).hexdigest()


def document_key(uri: str, where: str) -> str:
    return f"{uri}:{where.replace(', ', ':').replace(' ', '')}"


def plan_shards(indexes: Sequence[FileIndex], traces_per_shard: int) -> Plan:
    """Group the traces of `indexes` (in input order) and deal them into shards."""
    order: list[str] = []
    seen: set[str] = set()
    linked: dict[str, str] = {}

    def top(trace_id: str) -> str:
        while trace_id in linked:
            trace_id = linked[trace_id]
        return trace_id

    for index in indexes:
        for trace_id, (_, _, links) in index.traces.items():
            if trace_id not in seen:
                seen.add(trace_id)
                order.append(trace_id)
            for other in links:
                a, b = top(trace_id), top(other)
                if a != b:
                    linked[b] = a
    key_of: dict[str, str] = {}
    first_of: dict[str, str] = {}
    for trace_id in order:
        key_of[trace_id] = first_of.setdefault(top(trace_id), trace_id)
    # key -> file -> the trace ids (or the document) of that key the file holds
    held: dict[str, dict[str, list[str]]] = {}
    start: dict[str, int | None] = {}
    for index in indexes:
        for trace_id, (_, began, _) in index.traces.items():
            key = key_of[trace_id]
            held.setdefault(key, {}).setdefault(index.uri, []).append(trace_id)
            earliest = start.get(key)
            if began is not None and (earliest is None or began < earliest):
                start[key] = began
            start.setdefault(key, None)
        for place in index.documents:
            key = document_key(index.uri, place)
            key_of[key] = key
            held[key] = {index.uri: [key]}
            start[key] = None
    count = max(1, -(-len(held) // max(1, traces_per_shard)))
    number_of = {key: int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) % count for key in held}
    files: list[dict[str, list[str]]] = [{} for _ in range(count)]
    keys: list[dict[str, str]] = [{} for _ in range(count)]
    traces: list[dict[str, tuple[str, int | None]]] = [{} for _ in range(count)]
    for key, by_file in held.items():
        number = number_of[key]
        traces[number][key] = (next(iter(by_file)), start.get(key))
        for uri, ids in by_file.items():
            keys[number].update((member, key) for member in ids)
            files[number].setdefault(uri, []).extend(ids)
    position = {index.uri: n for n, index in enumerate(indexes)}
    shards = [
        Shard(
            n,
            # a shard's files in input order, as `score` reads them
            {u: tuple(files[n][u]) for u in sorted(files[n], key=position.__getitem__)},
            keys[n],
            traces[n],
        )
        for n in range(count)
        if traces[n]
    ]
    where = {key: list(by_file) for key, by_file in held.items()}
    shared = [(key, files) for key, files in where.items() if len(files) > 1]
    warnings = [w for index in indexes for w in index.warnings]
    return Plan(shards, len(held), shared, warnings)
