"""The self-contained HTML report of scored traces.

One file, no external URL: the overview (traces, agents, criteria, a table of scores by
agent name, the distribution of each criterion's overall scores as inline SVG) is
rendered here; the traces are embedded as compact JSON, worst first, and a small inline
script renders a page of them at a time (a filter reaches the rest), each trace as its
agent tree with every agent's scores and explanations, the failing ones first, and its
model calls (messages, tool calls and results) folded in `<details>` that are filled
when opened. Every text reaches the page through `textContent` or `html.escape`, and the
embedded JSON is escaped so that no text can close its `<script>` element.

Size stays bounded at any number of traces: texts are cut at `max_text` characters, and
model calls are embedded only until `max_bytes` of trace data are written (worst traces
first); later traces keep their scores and explanations and say that their calls were
left out.

- `trace_entry(trace_id, trace, lines)`: one trace's embedded data, from its result lines
  (with the judge's `usage` on the trace, and per criterion in `results`).
- `write_report(out, summary, entries)`: the whole report, streamed to `out`.
- `render_trace_page(trace, responses)`: a page for one trace (what the server serves at
  /ui/traces/{id}).
- `content_security_policy()`: the Content-Security-Policy under which these pages run
  their own inline style and script and nothing else (what a server sends with them).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from tracejudge.models import (
    JUDGED_BAR,
    JudgeUsage,
    LLMInteraction,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    fails,
)
from tracejudge.report.results import (
    ScoreSummary,
    bars_text,
    format_summary,
    line_bar,
    line_usage,
    result_lines,
    usage_of,
    usage_sentence,
)

__all__ = ["content_security_policy", "render_trace_page", "trace_entry", "write_report"]

#: Characters of one message, tool argument or result kept in the report.
MAX_TEXT = 4000
#: Bytes of embedded trace data after which model calls are left out.
MAX_BYTES = 24 * 1024 * 1024


def _cut(text: str | None, limit: int) -> str:
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} more characters]"


def _call(interaction: LLMInteraction, limit: int) -> dict[str, Any]:
    """A model call as compact data: messages in and out as [role, kind, text]."""

    def content(value: Any) -> tuple[str, str]:
        if isinstance(value, LLMToolCall):
            return "call", _cut(f"{value.name}({value.parameters}) [{value.id}]", limit)
        if isinstance(value, LLMToolResponse):
            name = f"{value.name} " if value.name else ""
            return "result", _cut(f"{name}[{value.id}] {value.response}", limit)
        return "text", _cut(str(value), limit)

    call: dict[str, Any] = {
        "in": [[m.role, *content(m.content)] for m in interaction.input_messages],
        "out": [["assistant", *content(m.content)] for m in interaction.output_messages],
    }
    for key in ("model", "error", "finish_reason", "refusal"):
        value = getattr(interaction, key)
        if value:
            call[key] = _cut(str(value), limit)
    if interaction.reasoning:
        call["reasoning"] = _cut(interaction.reasoning, limit)
    if interaction.usage is not None:
        call["tokens"] = interaction.usage.total_tokens
    if interaction.start_time and interaction.end_time:
        call["seconds"] = round(interaction.end_time - interaction.start_time, 3)
    return call


def trace_entry(
    trace_id: str,
    trace: MultiAgentTrace,
    lines: Sequence[Mapping[str, Any]],
    *,
    max_text: int = MAX_TEXT,
    with_calls: bool = True,
) -> dict[str, Any]:
    """One trace's data for the report: its agent tree (parent index, name, model calls)
    and, per criterion, the overall score and each agent's score and explanation.

    `lines` are the trace's result lines (see `tracejudge.report.results`).
    """
    agents = list(trace.iter_agents())
    index = {agent.id: i for i, agent in enumerate(agents)}
    tree = []
    for agent in agents:
        parent = trace.parent_of(agent.id)
        node: dict[str, Any] = {
            "name": agent.name,
            "parent": index.get(parent.id) if parent is not None else None,
            "n": len(agent.llm_interactions),
        }
        if with_calls:
            node["calls"] = [_call(i, max_text) for i in agent.llm_interactions]
        tree.append(node)
    results = []
    failing = False
    spent: JudgeUsage | None = None
    for line in lines:
        by_agent = line.get("agents") or {}
        bar = line_bar(line)
        agent_rows = [
            [index[i], a.get("score"), _cut(a.get("explanation"), max_text)]
            for i, a in by_agent.items()
            if i in index
        ]
        failing = failing or any(fails(row[1], bar) for row in agent_rows)
        result: dict[str, Any] = {
            "criterion": line["criterion"],
            "overall": line.get("overall_score"),
            "bar": bar,
            "explanation": _cut(line.get("explanation"), max_text),
            "agents": agent_rows,
        }
        usage = usage_of(line)
        if usage is not None:
            result["usage"] = line_usage(usage)
            spent = usage if spent is None else spent + usage
        results.append(result)
    # A trace shows its worst agent's score, never a mean that hides it.
    scores = [row[1] for r in results for row in r["agents"] if row[1] is not None]
    entry: dict[str, Any] = {
        "id": trace_id,
        "worst": min(scores) if scores else None,
        "failing": failing,
        "agents": tree,
        "results": results,
    }
    if spent is not None:
        entry["usage"] = line_usage(spent)  # the judge's usage on this trace, all criteria
    source = next((line.get("source") for line in lines if line.get("source")), None)
    if source:
        entry["source"] = source
    return entry


def render_trace_page(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    trace_id: str = "trace",
    title: str | None = None,
    home: str | None = None,
) -> str:
    """A complete, self-contained HTML page for one scored trace, opened at its tree.
    `home`: the address of a page to link back to (the server's list of traces)."""
    import io

    lines = result_lines(trace_id, trace, responses)
    summary = ScoreSummary()
    summary.add(lines)
    out = io.StringIO()
    write_report(
        out,
        summary,
        [trace_entry(trace_id, trace, lines)],
        title=title or f"tracejudge: trace {trace_id}",
        home=home,
    )
    return out.getvalue()


def _source_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy() -> str:
    """A Content-Security-Policy header value for the pages of this module: their inline
    style and script (by hash) run, nothing else loads or runs (no other script, no
    external URL, no form, no frame around the page)."""
    return (
        f"default-src 'none'; style-src {_source_hash(_CSS)}; "
        f"script-src {_source_hash(_SCRIPT)}; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    )


# --------------------------------------------------------------------------- the page


def _json(value: Any) -> str:
    """JSON that is safe inside <script>: no "<", ">" or "&", no JS line separators."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def write_report(
    out: TextIO,
    summary: ScoreSummary,
    entries: Iterable[dict[str, Any]],
    *,
    title: str = "tracejudge report",
    max_bytes: int = MAX_BYTES,
    home: str | None = None,
) -> None:
    """Write the report to `out`: the overview from `summary`, then `entries` (from
    `trace_entry`, worst first: the page shows them in this order) as embedded data.
    `home`: the address of a page to link back to, shown above the title.

    Past `max_bytes` of written entries, an entry's model calls are dropped (its
    agents say "calls": null).
    """
    e = html.escape
    out.write(
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>\n"
        f"<header>{_home_link(home)}<h1>{e(title)}</h1></header>\n"
    )
    out.write(_overview(summary))
    out.write(
        '<section id="traces"><h2>Traces</h2><div class="controls">'
        '<input id="tj-filter" type="search" placeholder="filter: trace id, agent, criterion, '
        'text" aria-label="filter"> <label><input id="tj-failing" type="checkbox"> failing '
        'only</label> <button id="tj-prev" type="button">previous</button> '
        '<span id="tj-page"></span> <button id="tj-next" type="button">next</button></div>'
        '<div id="tj-list"></div></section>\n'
    )
    meta = {"bar": summary.bar if summary.bar is not None else JUDGED_BAR}
    out.write(f'<script type="application/json" id="tj-meta">{_json(meta)}')
    out.write('</script>\n<script type="application/json" id="tj-data">[')
    written = 0
    for number, entry in enumerate(entries):
        if written > max_bytes:
            entry = {**entry, "agents": [{**a, "calls": None} for a in entry["agents"]]}
        text = _json(entry)
        written += len(text)
        out.write(("," if number else "") + text + "\n")
    out.write(f"]</script>\n<script>{_SCRIPT}</script>\n</body></html>\n")


def _home_link(home: str | None) -> str:
    if home is None:
        return ""
    return f'<nav><a href="{html.escape(home, quote=True)}">&larr; all traces</a></nav>'


def _score_class(score: float | None, bar: float) -> str:
    if score is None:
        return "na"
    if score < bar:
        return "bad"
    return "warn" if score < 1.0 else "good"


def _overview(summary: ScoreSummary) -> str:
    e = html.escape
    names = summary.agent_names
    parts = [
        '<section id="overview"><h2>Overview</h2><p class="counts">',
        f"<b>{summary.traces}</b> traces, <b>{len(summary.failing_traces)}</b> failing "
        f"(an agent {e(bars_text(summary))}); <b>{len(names)}</b> agents ({e(', '.join(names))}); "
        f"<b>{len(summary.criteria)}</b> criteria; {summary.findings_count} findings.</p>",
        _cost_line(summary),
        '<div class="charts">',
    ]
    for criterion in summary.criteria:
        parts.append(_histogram(criterion, summary.worst.get(criterion, [])))
    parts.append("</div>")
    parts.append('<table class="summary"><thead><tr><th>agent</th><th>instances</th>')
    parts.append(
        "<th>criterion</th><th>failing</th><th>mean</th><th>median</th><th>min</th>"
        "<th>max</th></tr></thead><tbody>"
    )
    for name in names:
        for criterion in summary.criteria:
            found = summary.stats(name, criterion)
            if found is None:
                continue
            bar = summary.bar_of(criterion)
            values = (found.mean, found.median, found.min, found.max)
            cells = "".join(f'<td class="{_score_class(v, bar)}">{v:.2f}</td>' for v in values)
            failing = "bad" if found.failing else "good"
            parts.append(
                f"<tr><td>{e(name)}</td><td>{summary.instances(name)}</td>"
                f'<td>{e(criterion)}</td><td class="{failing}">{found.failing} of '
                f"{found.scored}</td>{cells}</tr>"
            )
    parts.append("</tbody></table>")
    parts.append(f"<details><summary>Summary as text</summary><pre>{e(format_summary(summary))}")
    parts.append("</pre></details></section>\n")
    return "".join(parts)


def _cost_line(summary: ScoreSummary) -> str:
    """The judge's calls, tokens and dollars over the report, and how many results were
    not evaluated (empty when nothing was judged)."""
    if not summary.usage_by_criterion and not summary.not_evaluated:
        return ""
    e = html.escape
    text = ""
    if summary.usage_by_criterion:
        text = f"{e(usage_sentence(summary.usage))}."
        if summary.unpriced:
            text += f" Cost unknown for {summary.unpriced} results (no price for the model)."
    if summary.not_evaluated:
        reasons = "; ".join(summary.not_evaluated_reasons)
        text += (
            f' <span class="na">{summary.not_evaluated} agent results not evaluated '
            f"({e(reasons)}), left out of the figures.</span>"
        )
    return f'<p class="cost" id="tj-cost">{text.strip()}</p>'


def _histogram(criterion: str, scores: Sequence[float], bins: int = 10) -> str:
    """An inline SVG bar chart of overall scores in `bins` bins over 0..1."""
    counts = [0] * bins
    for score in scores:
        counts[min(int(score * bins), bins - 1)] += 1
    top = max(counts) or 1
    width, height, bar = 220, 90, 20
    bars = []
    for i, count in enumerate(counts):
        h = round(70 * count / top)
        low, high = i / bins, (i + 1) / bins
        colour = "#c0392b" if high <= 0.5 else "#d68910" if high < 1 else "#1e8449"
        bars.append(
            f'<rect x="{i * (bar + 2)}" y="{75 - h}" width="{bar}" height="{h}" '
            f'fill="{colour}"><title>{low:.1f}–{high:.1f}: {count}</title></rect>'
        )
    e = html.escape
    return (
        f'<figure class="chart"><svg width="{width}" height="{height}" role="img" '
        f'aria-label="{e(criterion)}: distribution of worst agent scores">{"".join(bars)}'
        f'<text x="0" y="88" font-size="10">0</text><text x="{width - 12}" y="88" '
        f'font-size="10">1</text></svg><figcaption>{e(criterion)} '
        f"({len(scores)})</figcaption></figure>"
    )


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#222}
h1{font-size:20px}h2{font-size:17px;border-bottom:1px solid #ddd}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{margin:0}figcaption{font-size:12px}
table.summary{border-collapse:collapse;margin:12px 0}
table.summary td,table.summary th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.good{color:#1e8449}.warn{color:#b9770e}.bad{color:#c0392b;font-weight:600}.na{color:#888}
.controls{margin:8px 0}#tj-filter{width:360px}
.trace{border:1px solid #ccc;border-radius:4px;margin:6px 0}
.trace>summary{padding:4px 8px;cursor:pointer;background:#f6f6f6}
.tree{list-style:none;padding-left:18px;margin:4px 0}
.agent{border-left:3px solid #bbb;padding:2px 8px;margin:4px 0}
.agent.failing{border-left-color:#c0392b}
.agent-name{font-weight:600}.score{display:inline-block;min-width:3em;margin-right:6px}
.result{margin:1px 0}.expl{white-space:pre-wrap;color:#444}
.msg{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;
background:#fafafa;border:1px solid #eee;margin:2px 0;padding:2px 6px}
.role{font-weight:600;color:#555}.call{background:#eef5fb}.res{background:#f3f9ee}
.note{color:#888;font-style:italic}
"""

# Rendered from the embedded JSON with createElement/textContent only: no text is ever
# parsed as HTML. A page of PAGE traces at a time; a trace's model calls are built when
# its <details> opens.
_SCRIPT = r"""
(function(){
"use strict";
var PAGE=50;
var meta=JSON.parse(document.getElementById("tj-meta").textContent);
var data=JSON.parse(document.getElementById("tj-data").textContent);
var list=document.getElementById("tj-list"),filter=document.getElementById("tj-filter");
var failing=document.getElementById("tj-failing"),pageLabel=document.getElementById("tj-page");
var page=0,shown=data;
function el(tag,cls,text){var n=document.createElement(tag);if(cls)n.className=cls;
 if(text!==undefined&&text!==null)n.textContent=String(text);return n;}
function cls(s,bar){if(s===null||s===undefined)return "na";if(s<bar)return "bad";
 return s<1?"warn":"good";}
function fmt(s){return (s===null||s===undefined)?"n/a":s.toFixed(2);}
function failingEntry(t){return t.failing;}
function text(t){var parts=[t.id,t.source||""];t.agents.forEach(function(a){parts.push(a.name);});
 t.results.forEach(function(r){parts.push(r.criterion,r.explanation);
 r.agents.forEach(function(x){parts.push(x[2]);});});return parts.join("\n").toLowerCase();}
function message(m){var d=el("div","msg"+(m[1]==="call"?" call":m[1]==="result"?" res":""));
 d.appendChild(el("span","role",m[0]+(m[1]!=="text"?" ("+m[1]+")":"")+": "));
 d.appendChild(document.createTextNode(m[2]));return d;}
function calls(agent){var box=el("details");
 box.appendChild(el("summary",null,agent.n+" model call"+(agent.n===1?"":"s")));
 if(agent.calls===null||agent.calls===undefined){
  box.appendChild(el("div","note","model calls left out to keep the report small"));return box;}
 box.addEventListener("toggle",function(){if(!box.open||box.dataset.done)return;
  box.dataset.done="1";agent.calls.forEach(function(c,i){var d=el("div","call-box");
   var head="call "+(i+1)+(c.model?" · "+c.model:"")+(c.tokens!==undefined?" · "+c.tokens+
    " tokens":"")+(c.seconds!==undefined?" · "+c.seconds+" s":"");
   d.appendChild(el("div","note",head));c.in.forEach(function(m){d.appendChild(message(m));});
   if(c.reasoning)d.appendChild(message(["assistant","reasoning",c.reasoning]));
   c.out.forEach(function(m){d.appendChild(message(m));});
   ["error","refusal","finish_reason"].forEach(function(k){
    if(c[k])d.appendChild(el("div","note",k+": "+c[k]));});box.appendChild(d);});});
 return box;}
function tree(t){var kids={};t.agents.forEach(function(a,i){var p=a.parent===null?-1:a.parent;
 (kids[p]=kids[p]||[]).push(i);});
 function scoresOf(i){var rows=[];t.results.forEach(function(r){r.agents.forEach(function(x){
  if(x[0]===i)rows.push({c:r.criterion,s:x[1],e:x[2],b:r.bar});});});
  function rank(r){return r.s===null?2:(r.s<r.b?0:1);}
  rows.sort(function(a,b){return rank(a)-rank(b);});return rows;}
 function node(i){var a=t.agents[i],li=el("li","agent"),rows=scoresOf(i);
  if(rows.some(function(r){return r.s!==null&&r.s<r.b;}))li.className+=" failing";
  li.appendChild(el("div","agent-name",a.name));rows.forEach(function(r){
   var d=el("div","result");d.appendChild(el("span","score "+cls(r.s,r.b),fmt(r.s)));
   d.appendChild(el("b",null,r.c+" "));if(r.e)d.appendChild(el("span","expl",r.e));
   li.appendChild(d);});li.appendChild(calls(a));
  var sub=kids[i];if(sub){var ul=el("ul","tree");sub.forEach(function(k){ul.appendChild(node(k));});
   li.appendChild(ul);}return li;}
 var ul=el("ul","tree");(kids[-1]||[]).forEach(function(i){ul.appendChild(node(i));});return ul;}
function traceView(t,open){var d=el("details","trace");d.id="trace-"+t.id;
 var s=el("summary");s.appendChild(el("span","score "+(t.failing?"bad":cls(t.worst,0)),
  fmt(t.worst)));
 s.appendChild(document.createTextNode(" trace "+t.id+(t.source?" ("+t.source+")":"")+" · "+
  t.agents.length+" agents · "));t.results.forEach(function(r){
  var low=null;r.agents.forEach(function(x){if(x[1]!==null&&(low===null||x[1]<low))low=x[1];});
  s.appendChild(el("span","score "+cls(low,r.bar),r.criterion+" "+fmt(low)+" "));});
 d.appendChild(s);var filled=false;function fill(){if(filled)return;filled=true;
  d.appendChild(tree(t));}
 d.addEventListener("toggle",function(){if(d.open)fill();});if(open){fill();d.open=true;}
 return d;}
function render(){list.textContent="";var pages=Math.max(1,Math.ceil(shown.length/PAGE));
 if(page>=pages)page=pages-1;var want=decodeURIComponent(location.hash.replace(/^#trace-/,""));
 shown.slice(page*PAGE,(page+1)*PAGE).forEach(function(t,i){
  list.appendChild(traceView(t,want?t.id===want:(i===0&&page===0)));});
 pageLabel.textContent="page "+(page+1)+" of "+pages+" · "+shown.length+" of "+data.length+
  " traces";}
function apply(){var q=filter.value.trim().toLowerCase(),only=failing.checked;
 shown=data.filter(function(t){if(only&&!failingEntry(t))return false;
  if(!q)return true;if(t._text===undefined)t._text=text(t);return t._text.indexOf(q)>=0;});
 page=0;render();}
filter.addEventListener("input",apply);failing.addEventListener("change",apply);
document.getElementById("tj-prev").addEventListener("click",function(){if(page>0){page--;
 render();}});
document.getElementById("tj-next").addEventListener("click",function(){
 if((page+1)*PAGE<shown.length){page++;render();}});
var wanted=decodeURIComponent(location.hash.replace(/^#trace-/,""));
if(wanted){var at=data.findIndex(function(t){return t.id===wanted;});
 if(at>=0)page=Math.floor(at/PAGE);}
render();
})();
"""
