"""People's labels through the server's API (a real server on loopback, SQLite): agree,
disagree and one's own score recorded with who and when, a label recorded again replaced,
the list filtered by trace and paged, the export read back as the labels file `calibrate`
reads; who is the API key's name with keys and the body's name without; bad labels
refused naming the field; the page's own address takes JSON from the page only."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.server.labelled import DEFAULT_CRITERIA, POLITE, record_faulty_trace, store_scored
from tracejudge.calibration import read_labels
from tracejudge.cli import main
from tracejudge.models import MultiAgentTrace
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig


@dataclass
class Stored:
    db: str
    trace_id: str
    other_id: str
    trace: MultiAgentTrace

    @property
    def ids(self) -> dict[str, str]:
        return {a.name: a.id for a in self.trace.iter_agents()}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, composo_tracing: TracerProvider) -> Stored:
    db = str(tmp_path_factory.mktemp("labels") / "labels.db")
    trace = record_faulty_trace()
    return Stored(
        db, store_scored(db, trace, DEFAULT_CRITERIA), store_scored(db, trace, [POLITE]), trace
    )


@pytest.fixture
def open_server(stored: Stored, tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "copy.db"
    db.write_bytes(Path(stored.db).read_bytes())  # every test on its own copy
    with BackgroundServer(ServerConfig(port=0, db=str(db)), checks_only=True) as server:
        yield server.url


def _label(stored: Stored, agent: str, stance: str, **more: object) -> dict[str, object]:
    return {
        "trace_id": stored.trace_id,
        "agent_instance_id": stored.ids[agent],
        "criterion": more.pop("criterion", POLITE),
        "stance": stance,
        **more,
    }


def test_agree_disagree_and_own_scores_are_recorded_with_who_and_when(
    stored: Stored, open_server: str, tmp_path: Path
) -> None:
    url = f"{open_server}/api/v1/labels"
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    # the judge passed the orchestrator and failed the researcher on POLITE
    agreed = httpx.post(url, json=_label(stored, "orchestrator", "agree", who="ana"))
    assert agreed.status_code == 201, agreed.text
    label = agreed.json()
    assert (label["agent"], label["stance"], label["verdict"], label["judge_score"]) == (
        "orchestrator",
        "agree",
        "pass",
        1.0,
    )
    assert label["who"] == "ana" and label["bar"] == 0.5
    assert dt.datetime.fromisoformat(label["when"].replace("Z", "+00:00")) >= before
    disagreed = httpx.post(
        url, json=_label(stored, "researcher", "disagree", who="ana", note="it was polite")
    ).json()
    assert (disagreed["verdict"], disagreed["judge_score"], disagreed["note"]) == (
        "pass",
        0.0,
        "it was polite",
    )
    own = httpx.post(
        url,
        json=_label(
            stored, "researcher", "score", criterion="tool_arguments", score=0.25, who="bo"
        ),
    ).json()
    assert (own["verdict"], own["score"], own["judge_score"], own["bar"]) == (None, 0.25, 0.0, 1.0)
    # ana changes her mind: the label is replaced, not added
    again = httpx.post(url, json=_label(stored, "orchestrator", "disagree", who="ana")).json()
    assert again["id"] == label["id"] and again["verdict"] == "fail"
    on_other = httpx.post(
        url,
        json={**_label(stored, "orchestrator", "agree", who="ana"), "trace_id": stored.other_id},
    )
    assert on_other.status_code == 201

    listed = httpx.get(url, params={"trace_id": stored.trace_id}).json()
    assert [(x["agent"], x["criterion"], x["who"]) for x in listed["labels"]] == [
        ("orchestrator", POLITE, "ana"),  # newest first
        ("researcher", "tool_arguments", "bo"),
        ("researcher", POLITE, "ana"),
    ]
    assert listed["next_cursor"] is None
    first = httpx.get(url, params={"limit": 2}).json()
    rest = httpx.get(url, params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert len(first["labels"]) == 2 and len(rest["labels"]) == 2 and rest["next_cursor"] is None

    exported = httpx.get(f"{url}/export", params={"trace_id": stored.trace_id})
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    path = tmp_path / "labels.jsonl"
    path.write_text(exported.text)
    lines = read_labels(path)  # the labels file calibrate reads
    assert [(x.agent, x.agent_instance_id, x.verdict, x.score, x.who) for x in lines] == [
        ("researcher", stored.ids["researcher"], "pass", None, "ana"),
        ("researcher", stored.ids["researcher"], None, 0.25, "bo"),
        ("orchestrator", stored.ids["orchestrator"], "fail", None, "ana"),
    ]
    assert lines[0].note == "it was polite" and all(x.when for x in lines)
    assert len(httpx.get(f"{url}/export").text.splitlines()) == 4  # every trace's


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"who": None}, 422, "who"),
        ({"stance": "maybe"}, 422, "stance"),
        ({"stance": "score"}, 422, "score"),
        ({"stance": "score", "score": 1.5}, 422, "score"),
        ({"score": 0.5}, 422, "score"),
        ({"agent_instance_id": "nobody"}, 422, "agent_instance_id"),
        ({"criterion": "never scored"}, 422, "stance"),
        ({"trace_id": "f" * 32}, 404, None),
        ({"trace_id": None}, 422, "trace_id"),
        ({"extra": 1}, 422, "extra"),
    ],
)
def test_a_bad_label_is_refused_naming_its_field(
    stored: Stored, open_server: str, change: dict[str, object], status: int, field: str | None
) -> None:
    body = {**_label(stored, "orchestrator", "agree", who="ana"), **change}
    body = {k: v for k, v in body.items() if v is not None}
    answer = httpx.post(f"{open_server}/api/v1/labels", json=body)
    assert answer.status_code == status, answer.text
    if field is not None:
        assert field in answer.json()["detail"]
    assert httpx.get(f"{open_server}/api/v1/labels").json()["labels"] == []


def test_with_keys_who_is_the_key_s_name(
    stored: Stored, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "keys.db"
    db.write_bytes(Path(stored.db).read_bytes())
    config = ServerConfig(port=0, db=str(db), api_keys=("ana tj-ana-secret", "tj-unnamed"))
    monkeypatch.delenv("COMPOSO_API_KEY", raising=False)
    with BackgroundServer(config, checks_only=True) as server:
        url = f"{server.url}/api/v1/labels"
        body = _label(stored, "orchestrator", "agree", criterion="loops")
        assert httpx.post(url, json=body).status_code == 401
        named = httpx.post(url, json=body, headers={"API-Key": "tj-ana-secret"})
        assert named.status_code == 201 and named.json()["who"] == "ana"
        unnamed = httpx.post(
            url,
            json=_label(stored, "researcher", "disagree", criterion="tool_arguments"),
            headers={"API-Key": "tj-unnamed"},
        )
        assert unnamed.json()["who"] == "key-2"
        # calibrate reads them from the server, its key in the URL (checks need no judge)
        address = server.url.replace("http://", "http://tj-unnamed@")
        assert main(["calibrate", "--server", address, "--json", "--bootstrap", "20"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert [(r["agent"], r["who"], r["human"], r["judge"]) for r in report["rows"]] == [
            ("orchestrator", "ana", "pass", "pass"),  # loops passed it, ana agreed
            ("researcher", "key-2", "pass", "fail"),  # tool_arguments failed it: disagreed
        ]
        assert main(["calibrate", "--server", server.url]) == 2
        assert "wants an API key" in capsys.readouterr().err
        assert main(["calibrate", "--server", server.url.replace("://", "://tj-wrong@")]) == 2
        assert "tj-wrong" not in capsys.readouterr().err
        posing = httpx.post(url, json={**body, "who": "bo"}, headers={"API-Key": "tj-ana-secret"})
        assert posing.status_code == 422 and "'ana'" in posing.json()["detail"]
        # the named key's full entry is no key: only the key itself opens the server
        assert httpx.get(url, headers={"API-Key": "ana tj-ana-secret"}).status_code == 401
        exported = httpx.get(f"{url}/export", headers={"API-Key": "tj-unnamed"}).text
        assert "tj-" not in exported and '"who":"ana"' in exported


def test_the_page_s_address_takes_json_from_the_page_only(stored: Stored, open_server: str) -> None:
    url = f"{open_server}/ui/traces/{stored.trace_id}/labels"
    origin = open_server  # http://127.0.0.1:port, the page's own
    body = {k: v for k, v in _label(stored, "orchestrator", "agree", who="ana").items()}
    del body["trace_id"]
    refused = [
        httpx.post(url, json=body),  # no Origin: not a page
        httpx.post(url, json=body, headers={"Origin": "http://evil.example"}),
        httpx.post(url, json=body, headers={"Origin": origin, "Sec-Fetch-Site": "cross-site"}),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403]
    form = httpx.post(
        url,
        content=b'{"stance": "agree"}',
        headers={"Origin": origin, "Content-Type": "text/plain"},
    )
    assert form.status_code == 415
    assert httpx.get(f"{open_server}/api/v1/labels").json()["labels"] == []
    taken = httpx.post(url, json=body, headers={"Origin": origin})
    assert taken.status_code == 201 and taken.json()["trace_id"] == stored.trace_id
    other = httpx.post(url, json={**body, "trace_id": stored.other_id}, headers={"Origin": origin})
    assert other.status_code == 422 and "trace_id" in other.json()["detail"]
