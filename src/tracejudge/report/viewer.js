// The trace viewer of tracejudge's pages: the server's page of one trace (#tj-trace) and
// the batch report's list of traces (#tj-list), each trace drawn by the same TraceView.
// Data come from the page's JSON blocks (report/trace_view.py says their shape). Every
// text reaches the page through textContent or an attribute: nothing is parsed as HTML.
// Big traces stay fast: the timeline and the model calls are shown a page at a time, and
// a model call's messages are built when its <details> opens.
(function () {
"use strict";
var PAGE_TRACES = 50, PAGE_ROWS = 200, PAGE_STEPS = 100, TREE_NODES = 300;

// ---------------------------------------------------------------- small helpers
function el(tag, cls, text) {
  var n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null) n.textContent = String(text);
  return n;
}
function add(parent, child) { parent.appendChild(child); return child; }
function txt(parent, text) { parent.appendChild(document.createTextNode(text)); }
function known(v) { return v !== null && v !== undefined; }
function scoreText(s) { return known(s) ? s.toFixed(2) : "n/a"; }
function scoreClass(s, bar) {
  if (!known(s)) return "na";
  if (s < bar) return "bad";
  return s < 1 ? "warn" : "good";
}
function ms(v) {
  if (!known(v)) return null;
  if (v < 10) return v.toFixed(1) + " ms";
  if (v < 1000) return Math.round(v) + " ms";
  return (v / 1000).toFixed(v < 10000 ? 2 : 1) + " s";
}
function dollars(c) { return "$" + (c >= 0.01 ? c.toFixed(2) : c.toPrecision(2)); }
function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
function tokens(t) { return t[0] + " in / " + t[1] + " out tokens"; }
function when(seconds) {
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}
// The page's fragment, decoded; "" when it is not valid percent-encoding (a hand-typed
// or cut-off link must never stop the page's script).
function fragment() {
  var raw = location.hash.replace(/^#/, "");
  try { return decodeURIComponent(raw); } catch (e) { return ""; }
}
function jump(anchor, text, cls) {
  var a = el("a", cls || "jump", text);
  a.setAttribute("href", "#" + encodeURIComponent(anchor));
  a.dataset.anchor = anchor;
  return a;
}
function section(parent, title) {
  var s = add(parent, el("section"));
  add(s, el("h2", null, title));
  return s;
}

// A list shown `size` items at a time with previous / next and a note of the range.
function Pager(box, count, size, draw, noun) {
  this.box = box; this.count = count; this.size = size; this.draw = draw; this.noun = noun;
  this.page = -1;
  this.items = add(box, el("div"));
  if (count > size) {
    var bar = add(box, el("div", "pager")), self = this;
    this.prev = add(bar, el("button", null, "previous"));
    this.prev.type = "button";
    this.label = add(bar, el("span"));
    this.next = add(bar, el("button", null, "next"));
    this.next.type = "button";
    this.prev.addEventListener("click", function () { self.show((self.page - 1) * size); });
    this.next.addEventListener("click", function () { self.show((self.page + 1) * size); });
  }
}
Pager.prototype.show = function (at) {
  var page = Math.max(0, Math.min(Math.floor(at / this.size), Math.ceil(this.count / this.size) - 1));
  if (page === this.page) return;
  this.page = page;
  this.items.textContent = "";
  var end = Math.min(this.count, (page + 1) * this.size);
  for (var i = page * this.size; i < end; i++) this.draw(i, this.items);
  if (this.label) {
    this.label.textContent = this.noun + " " + (page * this.size + 1) + "–" + end + " of " +
      this.count + " (" + this.size + " a page, to keep the page fast)";
    this.prev.disabled = page === 0;
    this.next.disabled = end >= this.count;
  }
};

// ---------------------------------------------------------------- one trace
function TraceView(t, prefix) {
  this.t = t;
  this.prefix = prefix;
  this.flagged = {};   // "k-i" -> criteria of the findings that point at model call i of agent k
  this.flaggedCalls = {};  // "k-i-callId" -> true: the tool calls findings point at
  this.calls = {};     // agent index -> {box, pager} of its model calls section
  this.causes = {};    // "k-i" -> ranks of the causes at model call i of agent k
  this.causeCalls = {};  // "k-i-callId" -> ranks of the causes at that tool call
  this.top = null;     // the most likely cause with a step: marked on the timeline
  var self = this;
  t.verdict.failures.forEach(function (f) {
    f.steps.forEach(function (s) {
      var key = s[0] + "-" + s[1];
      (self.flagged[key] = self.flagged[key] || []).push(f.criterion);
      if (s[2]) self.flaggedCalls[key + "-" + s[2]] = true;
    });
  });
  (t.attribution ? t.attribution.causes : []).forEach(function (c) {
    if (!c.step) return;
    var key = c.step[0] + "-" + c.step[1];
    (self.causes[key] = self.causes[key] || []).push(c.rank);
    if (c.step[2]) (self.causeCalls[key + "-" + c.step[2]] = self.causeCalls[key + "-" + c.step[2]] || []).push(c.rank);
    if (!self.top) self.top = c;
  });
  this.root = el("div", "view");
  this.head(this.root);
  this.search(this.root);
  this.verdict(section(this.root, "Verdict"));
  if (t.attribution) this.attribution(section(this.root, "Attribution"));
  this.tree(section(this.root, "Agents"));
  this.timeline(section(this.root, "Timeline"));
  this.steps(section(this.root, "Model calls"));
}
// Search within the trace: every message of every model call (tool calls and results
// included), each match a link to its call with the words around it.
var MAX_MATCHES = 50, SNIPPET = 60;
TraceView.prototype.search = function (box) {
  var self = this, form = add(box, el("form", "find"));
  form.setAttribute("role", "search");
  var label = add(form, el("label", null, "find in this trace "));
  var input = add(label, el("input"));
  input.type = "search";
  input.className = "find-in";
  input.placeholder = "a word or phrase in any message, tool call or result";
  var found = add(box, el("div", "found"));
  form.addEventListener("submit", function (e) { e.preventDefault(); self.find(input.value, found); });
  input.addEventListener("input", function () { if (!input.value) found.textContent = ""; });
};
TraceView.prototype.find = function (query, out) {
  var needle = query.trim().toLowerCase(), self = this, hits = 0, calls = 0;
  out.textContent = "";
  if (!needle) return;
  var list = el("ul", "matches");
  this.t.agents.forEach(function (a, k) {
    (a.calls || []).forEach(function (c, i) {
      if (!c) return;
      var messages = c.in.concat(c.out, c.results || []), first = true;
      messages.forEach(function (m) {
        var text = String(m[2] || ""), at = text.toLowerCase().indexOf(needle);
        if (at < 0) return;
        if (first) { calls++; first = false; }
        if (++hits > MAX_MATCHES) return;
        var li = add(list, el("li", "match"));
        li.appendChild(jump(self.anchor("step", k, i), self.callName(k, i)));
        txt(li, " · " + m[0] + (m[1] === "text" ? "" : " " + m[1]) + ": ");
        var start = Math.max(0, at - SNIPPET), end = Math.min(text.length, at + needle.length + SNIPPET);
        txt(li, (start ? "…" : "") + text.slice(start, at));
        add(li, el("mark", null, text.slice(at, at + needle.length)));
        txt(li, text.slice(at + needle.length, end) + (end < text.length ? "…" : ""));
      });
    });
  });
  var said = hits ? (hits === 1 ? "1 match" : hits + " matches") + " in " + plural(calls, "model call") +
    (hits > MAX_MATCHES ? " (the first " + MAX_MATCHES + " listed)" : "") :
    "no match for \u201c" + query.trim() + "\u201d in this trace's messages";
  add(out, el("p", hits ? "facts" : "na", said));
  if (hits) out.appendChild(list);
};
TraceView.prototype.anchor = function (kind, k, i) {
  return this.prefix + kind + "-" + k + (known(i) ? "-" + i : "");
};
TraceView.prototype.callName = function (k, i) {
  return this.t.agents[k].name + ", call " + (i + 1);
};
// A finding's or cause's step `[agent, call, tool call id, tool name]` as a link to it
// (`short`: without the agent's name, said next to it).
TraceView.prototype.stepLink = function (s, short) {
  var label = (short ? "call " + (s[1] + 1) : this.callName(s[0], s[1])) +
    (s[3] ? " · tool " + s[3] : "") + (s[2] ? " [" + s[2] + "]" : "");
  return jump(this.anchor("step", s[0], s[1]), label);
};

TraceView.prototype.head = function (box) {
  var t = this.t, v = t.verdict, failing = {};
  v.failures.forEach(function (f) { failing[f.agent] = true; });
  var status = add(box, el("div", "status " + t.status));
  if (t.status === "failed") {
    status.textContent = "FAILED: " + plural(v.failures.length, "failing finding") + " in " +
      plural(Object.keys(failing).length, "agent");
  } else if (t.status === "passed") {
    status.textContent = "passed: " + plural(v.scored, "score") + ", none below its bar";
  } else {
    status.textContent = "unscored: no criterion gave a score";
  }
  var o = t.totals, facts = [plural(t.agents.length, "agent"), plural(o.calls, "model call")];
  if (o.input_tokens || o.output_tokens) facts.push(tokens([o.input_tokens, o.output_tokens]));
  if (o.unpriced && o.cost === 0) facts.push("cost unknown (no price for its models)");
  else if (o.unpriced) facts.push(dollars(o.cost) + " + " + plural(o.unpriced, "call") + " at no known price");
  else if (o.input_tokens || o.output_tokens) facts.push(dollars(o.cost));
  facts.push(known(o.ms) ? ms(o.ms) : "no timing recorded");
  if (known(t.start)) facts.push("started " + when(t.start));
  if (v.not_evaluated.length) facts.push(plural(v.not_evaluated.length, "result") + " not evaluated");
  add(box, el("div", "facts", facts.join(" · ")));
  var first = t.attribution && t.attribution.causes[0];
  if (first) {
    var line = add(box, el("div", "cause-line", "most likely cause: "));
    line.appendChild(first.step ? this.stepLink(first.step) : jump(this.anchor("agent", first.agent), t.agents[first.agent].name));
    if (!first.step) txt(line, " (the agent as a whole)");
    txt(line, " · " + first.method + ", confidence " + first.confidence.toFixed(2));
  }
};

// The attribution: which agent and step most likely caused the failure, ranked, each
// with what found it, how sure it is and what shows it.
var METHODS = {checks: "the deterministic checks", all_at_once: "a judge, all at once",
  step_by_step: "a judge, step by step", binary_search: "a judge, by binary search",
  counterfactual: "a judge, by counterfactual"};
TraceView.prototype.attribution = function (box) {
  var t = this.t, at = t.attribution, self = this;
  var how = at.methods.map(function (m) { return METHODS[m] || m; }).join(", ");
  var intro = "The most likely causes of the failure, most likely first, found by " + how +
    (at.methods.length === 1 && at.methods[0] === "checks" ? " (no judge)" : "");
  if (at.usage) intro += "; the judge: " + plural(at.usage.calls, "call") +
    (known(at.usage.cost_usd) ? ", " + dollars(at.usage.cost_usd) : "");
  add(box, el("p", "facts", intro + "."));
  if (at.outcome) add(box, el("p", "expl", "what went wrong: " + at.outcome));
  else if (!t.verdict.failures.length) add(box, el("p", "expl", "no criterion failed: the run was reported failed"));
  if (!at.causes.length) add(box, el("p", "na", "No cause found."));
  var list = add(box, el("ol", "causes"));
  at.causes.forEach(function (c) {
    var li = add(list, el("li", "cause" + (c === self.top ? " top" : "")));
    li.value = c.rank;
    li.dataset.rank = c.rank;
    li.appendChild(jump(self.anchor("agent", c.agent), t.agents[c.agent].name));
    txt(li, " · ");
    if (c.step) {
      li.appendChild(self.stepLink(c.step, true));
      if (known(c.index)) {
        var place = add(li, el("span", "facts", " (call " + (c.index + 1) + " of the whole trace)"));
        place.title = "the call's place among all the trace's model calls, counted from 1 (the JSON's index + 1)";
      }
    } else txt(li, "the agent as a whole");
    var facts = [c.method + (c.criteria.length ? " (" + c.criteria.join(", ") + ")" : ""),
      "confidence " + c.confidence.toFixed(2)];
    if (known(c.consequence_of)) facts.push("may follow from cause " + c.consequence_of);
    add(li, el("div", "facts", facts.join(" · ")));
    if (c.evidence) add(li, el("div", "expl", c.evidence));
    if (c.fix) {
      var changes = c.outcome_changes === true ? " (would avoid the failure)" :
        c.outcome_changes === false ? " (would not avoid it)" : "";
      add(li, el("div", "expl", "smallest fix: " + c.fix + changes));
    }
  });
  if (at.left_out) add(box, el("p", "note", plural(at.left_out, "more cause") + " not shown"));
  at.notes.forEach(function (n) { add(box, el("p", "note", n)); });
};

TraceView.prototype.verdict = function (box) {
  var t = this.t, v = t.verdict, self = this;
  if (!v.failures.length) {
    add(box, el("p", t.status === "passed" ? "good" : "na", t.status === "passed" ?
      "No agent scored below its bar (" + plural(v.scored, "score") + ", " + v.not_applicable +
      " not applicable)." : "Nothing was scored."));
  } else {
    var list = add(box, el("ol", "findings"));
    v.failures.forEach(function (f) {
      var li = add(list, el("li", "finding"));
      add(li, el("span", "score bad", scoreText(f.score)));
      add(li, el("b", null, f.criterion));
      txt(li, " · agent ");
      li.appendChild(jump(self.anchor("agent", f.agent), t.agents[f.agent].name));
      txt(li, " · below its bar " + f.bar.toFixed(2));
      if (f.explanation) add(li, el("div", "expl", f.explanation));
      f.steps.forEach(function (s) {
        var where = add(li, el("div", "where"));
        txt(where, "→ ");
        where.appendChild(self.stepLink(s));
      });
    });
  }
  if (v.not_evaluated.length) {
    add(box, el("h3", null, "Could not be evaluated"));
    var ul = add(box, el("ul", "findings"));
    v.not_evaluated.forEach(function (n) {
      var li = add(ul, el("li", "finding"));
      add(li, el("span", "score ne", "not evaluated"));
      add(li, el("b", null, n.criterion));
      txt(li, " · agent " + t.agents[n.agent].name + ": ");
      add(li, el("span", "expl", n.reason));
    });
  }
};

// Each agent's scores, failing first, then not evaluated, then the rest as chips.
TraceView.prototype.scoresOf = function (k) {
  var rows = [];
  this.t.results.forEach(function (r) {
    r.agents.forEach(function (a) {
      if (a.agent === k) rows.push({c: r.criterion, s: a.score, e: a.explanation, b: r.bar, ne: a.not_evaluated});
    });
  });
  function rank(r) { return known(r.ne) ? 1 : known(r.s) && r.s < r.b ? 0 : 2; }
  rows.sort(function (a, b) { return rank(a) - rank(b); });
  return rows;
};

TraceView.prototype.agentFacts = function (a) {
  var used = [0, 0], facts = [plural(a.n, "model call")];
  a.steps.forEach(function (s) { if (s.tokens) { used[0] += s.tokens[0]; used[1] += s.tokens[1]; } });
  if (known(a.t0) && known(a.t1)) facts.push(ms(a.t1 - a.t0));
  if (used[0] || used[1]) facts.push(tokens(used));
  return facts.join(" · ");
};

TraceView.prototype.tree = function (box) {
  var t = this.t, self = this, kids = {}, drawn = 0, limit = TREE_NODES;
  t.agents.forEach(function (a, k) { var p = known(a.parent) ? a.parent : -1; (kids[p] = kids[p] || []).push(k); });
  function node(k) {
    drawn++;
    var a = t.agents[k], li = el("li", "agent"), rows = self.scoresOf(k);
    li.id = self.anchor("agent", k);
    if (rows.some(function (r) { return known(r.s) && r.s < r.b; })) li.className += " failing";
    var head = add(li, el("div"));
    add(head, el("span", "agent-name", a.name));
    txt(head, " ");
    add(head, el("span", "facts", self.agentFacts(a) + " · "));
    head.appendChild(jump(self.anchor("calls", k), "model calls"));
    var chips = null;
    rows.forEach(function (r) {
      if (known(r.ne) || (known(r.s) && r.s < r.b)) {
        var d = add(li, el("div", "result"));
        add(d, el("span", "score " + (known(r.ne) ? "ne" : "bad"), known(r.ne) ? "not evaluated" : scoreText(r.s)));
        add(d, el("b", null, r.c + " "));
        var why = known(r.ne) ? r.ne : r.e;
        if (why) add(d, el("span", "expl", why));
        return;
      }
      chips = chips || add(li, el("div"));
      var chip = add(chips, el("span", "chip " + scoreClass(r.s, r.b), scoreText(r.s) + " " + r.c));
      if (r.e) chip.title = r.e;
    });
    var sub = kids[k];
    if (sub && drawn < limit) {
      var ul = add(li, el("ul", "tree"));
      sub.forEach(function (c) { if (drawn < limit) ul.appendChild(node(c)); });
    }
    return li;
  }
  function draw() {
    box.querySelectorAll(".tree.top,.more").forEach(function (n) { n.remove(); });
    drawn = 0;
    var ul = add(box, el("ul", "tree top"));
    (kids[-1] || []).forEach(function (k) { if (drawn < limit) ul.appendChild(node(k)); });
    if (drawn < t.agents.length) {
      var more = add(box, el("button", "more", "show all " + t.agents.length + " agents (" + drawn + " shown)"));
      more.type = "button";
      more.addEventListener("click", function () { limit = Infinity; draw(); });
    }
  }
  this.showAllAgents = function () { if (limit !== Infinity) { limit = Infinity; draw(); } };
  draw();
};

// The waterfall: every agent (its span: its calls' and children's), every model call and
// every tool run, in the order they ran, a page of rows at a time.
TraceView.prototype.rows = function () {
  var t = this.t, rows = [];
  function walk(k) {
    var a = t.agents[k], children = a.children, next = 0;
    rows.push({kind: "agent", k: k, depth: a.depth});
    function childrenUpTo(calls) {
      while (next < children.length && children[next][0] <= calls) walk(children[next++][1]);
    }
    for (var i = 0; i < a.steps.length; i++) {
      childrenUpTo(i);
      rows.push({kind: "call", k: k, i: i, depth: a.depth + 1});
      a.steps[i].tools.forEach(function (tool) {
        rows.push({kind: "tool", k: k, i: i, tool: tool, depth: a.depth + 2});
      });
    }
    childrenUpTo(Infinity);
  }
  t.agents.forEach(function (a, k) { if (!known(a.parent)) walk(k); });
  return rows;
};

TraceView.prototype.timeline = function (box) {
  var t = this.t, self = this, total = t.totals.ms || 0, rows = this.rows();
  var grid = add(box, el("div", "tl"));
  var head = add(grid, el("div", "tl-row head"));
  add(head, el("div", null, "agent / model call / tool run"));
  add(head, el("div", null, "0 – " + (known(t.totals.ms) ? ms(total) : "no timing recorded")));
  add(head, el("div", null, "duration · model · tokens · cost"));
  function bar(track, t0, t1) {
    if (!known(t0) || !known(t1) || !total) return;
    var b = add(track, el("div", "tl-bar"));
    b.style.left = (100 * t0 / total) + "%";
    b.style.width = Math.max(0, 100 * (t1 - t0) / total) + "%";
  }
  function draw(n, items) {
    var r = rows[n], a = t.agents[r.k], row = add(items, el("div", "tl-row " + r.kind + "-row"));
    var label = add(row, el("div", "tl-label")), track = add(row, el("div", "tl-track"));
    var figs = add(row, el("div", "tl-figs"));
    label.style.paddingLeft = (r.depth * 14) + "px";
    var parts = [];
    if (r.kind === "agent") {
      label.appendChild(jump(self.anchor("agent", r.k), a.name));
      bar(track, a.t0, a.t1);
      parts.push(known(a.t0) && known(a.t1) ? ms(a.t1 - a.t0) : "no timing recorded");
      parts.push(plural(a.n, "model call"));
    } else if (r.kind === "call") {
      var s = a.steps[r.i], crit = self.flagged[r.k + "-" + r.i];
      row.dataset.agent = r.k;
      row.dataset.call = r.i;
      if (crit) {
        row.className += " failing";
        var mark = add(label, el("span", "mark", "✕"));
        mark.title = "failing: " + crit.join(", ");
      }
      self.causeMark(row, label, self.causes[r.k + "-" + r.i], r.k, r.i, null);
      label.appendChild(jump(self.anchor("step", r.k, r.i), "call " + (r.i + 1)));
      bar(track, s.t0, s.t1);
      parts.push(known(s.t0) && known(s.t1) ? ms(s.t1 - s.t0) : "no timing recorded");
      if (s.model) parts.push(s.model);
      if (s.tokens) parts.push(tokens(s.tokens));
      if (known(s.cost)) parts.push(dollars(s.cost));
      if (s.error) parts.push("error");
    } else {
      var tool = r.tool;
      if (self.flaggedCalls[r.k + "-" + r.i + "-" + tool[1]]) {
        row.className += " failing";
        add(label, el("span", "mark", "✕"));
      }
      self.causeMark(row, label, self.causeCalls[r.k + "-" + r.i + "-" + tool[1]], r.k, r.i, tool[1]);
      txt(label, "tool " + tool[0] + " [" + tool[1] + "]");
      bar(track, tool[3], tool[4]);
      if (known(tool[3])) parts.push("within " + ms(tool[4] - tool[3]) + ", between call " + (r.i + 1) + " and call " + (tool[2] + 1));
      else if (tool[2] === r.i) parts.push("no timing recorded (result from the tool's span)");
      else if (known(tool[2])) parts.push("no timing recorded (result in call " + (tool[2] + 1) + ")");
      else parts.push("no timing recorded, no result recorded");
    }
    figs.textContent = parts.join(" · ");
    figs.title = figs.textContent;
  }
  // The timeline opens at the page that holds the most likely cause.
  var opening = 0, top = this.top;
  if (top) {
    rows.forEach(function (r, n) {
      if (!opening && r.kind === "call" && r.k === top.step[0] && r.i === top.step[1]) opening = n;
    });
  }
  new Pager(grid, rows.length, PAGE_ROWS, draw, "rows").show(opening);
  if (t.left_out) {
    add(box, el("p", "note", "The model calls of this trace (" + t.totals.calls +
      ") were left out of the report to keep it small: its timeline shows its agents only."));
  }
  if (t.steps_left_out) {
    add(box, el("p", "note", plural(t.steps_left_out, "more model call") + " not drawn, to keep the page small"));
  }
};

// A timeline row's mark for the causes at its step (`ranks`; none: no mark); the most
// likely cause's row is "attributed".
TraceView.prototype.causeMark = function (row, label, ranks, k, i, callId) {
  if (!ranks) return;
  var top = this.top, isTop = top && top.step[0] === k && top.step[1] === i &&
    (callId === null || top.step[2] === callId);
  row.className += " has-cause" + (isTop ? " attributed" : "");
  var mark = el("span", "cause-mark", "◆" + ranks[0]);
  mark.title = (isTop ? "the most likely cause" : "cause " + ranks.join(", ")) + " of the failure";
  label.insertBefore(mark, label.firstChild);
};

// Each agent's model calls, folded: an agent's list is built when opened, a call's
// messages when the call is opened.
TraceView.prototype.steps = function (box) {
  var t = this.t, self = this;
  t.agents.forEach(function (a, k) {
    var findings = 0;
    for (var i = 0; i < a.n; i++) if (self.flagged[k + "-" + i]) findings++;
    var group = add(box, el("details", "calls"));
    group.id = self.anchor("calls", k);
    var summary = add(group, el("summary", null, a.name + " · " + plural(a.n, "model call")));
    if (findings) add(summary, el("span", "bad", " · " + plural(findings, "call") + " with findings"));
    group.addEventListener("toggle", function () { if (group.open) self.fillCalls(k); });
  });
};
TraceView.prototype.fillCalls = function (k) {
  if (this.calls[k]) return this.calls[k];
  var self = this, group = document.getElementById(this.anchor("calls", k));
  var pager = new Pager(group, this.t.agents[k].n, PAGE_STEPS, function (i, items) { items.appendChild(self.step(k, i)); }, "model calls");
  this.calls[k] = pager;
  pager.show(0);
  return pager;
};
TraceView.prototype.step = function (k, i) {
  var a = this.t.agents[k], s = a.steps[i] || {}, self = this;
  var d = el("details", "step"), crit = this.flagged[k + "-" + i];
  d.id = this.anchor("step", k, i);
  var parts = ["call " + (i + 1)];
  if (s.model) parts.push(s.model);
  if (s.tokens) parts.push(tokens(s.tokens));
  if (known(s.cost)) parts.push(dollars(s.cost));
  parts.push(known(s.t0) && known(s.t1) ? ms(s.t1 - s.t0) : "no timing recorded");
  if (known(s.t0)) parts.push("at +" + ms(s.t0));
  var summary = add(d, el("summary", null, parts.join(" · ")));
  if (crit) {
    d.className += " failing";
    add(summary, el("span", "bad", " · failing: " + crit.join(", ")));
  }
  var ranks = this.causes[k + "-" + i];
  if (ranks) {
    var top = ranks.indexOf(this.top.rank) >= 0;
    add(summary, el("span", "cause-mark", " · cause " + ranks.join(", ") + (top ? " (most likely)" : "")));
  }
  d.addEventListener("toggle", function () { if (d.open) self.fillStep(d, k, i); });
  return d;
};
TraceView.prototype.fillStep = function (d, k, i) {
  if (d.dataset.filled) return;
  d.dataset.filled = "1";
  var a = this.t.agents[k], body = add(d, el("div", "step-body")), self = this;
  var c = a.calls ? a.calls[i] : null;
  if (!c) { add(body, el("div", "note", "messages left out to keep the page small")); return; }
  var tools = {};
  ((a.steps[i] || {}).tools || []).forEach(function (tool) { tools[tool[1]] = tool; });
  if (c.skip) {
    add(body, el("div", "note", plural(c.skip, "earlier message") + " as in "))
      .appendChild(jump(this.anchor("step", k, i - 1), "call " + i));
  }
  c.in.forEach(function (m) { body.appendChild(self.message(m, k, i)); });
  if (c.reasoning) body.appendChild(this.message(["assistant", "reasoning", c.reasoning], k, i));
  c.out.forEach(function (m) {
    body.appendChild(self.message(m, k, i));
    var tool = m[1] === "call" ? tools[m[3]] : null;
    if (!tool) return;
    body.appendChild(self.toolRun(tool, m, k, i));
  });
  (c.results || []).forEach(function (m) { body.appendChild(self.message(m, k, i)); });
  ["error", "refusal", "finish_reason"].forEach(function (key) {
    if (c[key]) add(body, el("div", "note", key.replace("_", " ") + ": " + c[key]));
  });
};
// A tool run on its own: what it was given (the call's arguments), what it gave back
// (its result, wherever the trace holds it) and how long it ran, under the call that made
// it, as the tool's span recorded them.
TraceView.prototype.toolRun = function (tool, call, k, i) {
  var run = el("div", "tool-run"), a = this.t.agents[k];
  var time = known(tool[3]) && known(tool[4]) ? " · " + ms(tool[4] - tool[3]) : "";
  add(run, el("div", "role", "tool run " + tool[0] + " [" + tool[1] + "]" + time));
  var input = add(run, el("div", "io"));
  add(input, el("span", "k", "input: "));
  txt(input, call[2]);
  var result = null, at = tool[2];
  if (known(at) && a.calls && a.calls[at]) {
    var c = a.calls[at];
    (c.in.concat(c.results || [])).forEach(function (m) {
      if (m[1] === "result" && m[3] === tool[1] && result === null) result = m;
    });
  }
  var output = add(run, el("div", "io"));
  add(output, el("span", "k", "output: "));
  if (result) txt(output, result[2]);
  else txt(output, known(at) ? "(in a model call left out of this page)" : "(no result recorded)");
  if (known(at) && at !== i) {
    var where = add(run, el("div", "note", "the agent read it in "));
    where.appendChild(jump(this.anchor("step", k, at), "call " + (at + 1)));
  }
  return run;
};
TraceView.prototype.message = function (m, k, i) {
  var kind = m[1], d = el("div", "msg" + (kind === "call" ? " call" : kind === "result" ? " res" : ""));
  var label = m[0];
  if (kind === "call") label += " → tool call " + m[4] + " [" + m[3] + "]";
  else if (kind === "result") label += " ← result" + (m[4] ? " of " + m[4] : "") + " [" + m[3] + "]";
  else if (kind !== "text") label += " (" + kind + ")";
  if (kind === "call" && this.flaggedCalls[k + "-" + i + "-" + m[3]]) d.className += " flagged";
  add(d, el("span", "role", label + ": "));
  txt(d, m[2]);
  return d;
};

// Show what `anchor` names (an agent, an agent's calls, a model call): build it if it is
// not built, unfold it and scroll to it. False when this view has no such thing.
TraceView.prototype.reveal = function (anchor) {
  if (anchor.indexOf(this.prefix) !== 0) return false;
  var m = /^(agent|calls|step)-(\d+)(?:-(\d+))?$/.exec(anchor.slice(this.prefix.length));
  if (!m) return false;
  var k = Number(m[2]), agent = this.t.agents[k];
  if (!agent) return false;
  var target;
  if (m[1] === "agent") {
    target = document.getElementById(anchor);
    if (!target && this.showAllAgents) { this.showAllAgents(); target = document.getElementById(anchor); }
  } else {
    var group = document.getElementById(this.anchor("calls", k)), i = Number(m[3]);
    if (!group) return false;
    group.open = true;
    var pager = this.fillCalls(k);
    target = group;
    if (m[1] === "step" && i < pager.count) {
      pager.show(i);
      target = document.getElementById(anchor);
      target.open = true;
      this.fillStep(target, k, i);
    }
  }
  if (!target) return false;
  target.scrollIntoView({block: "start"});
  return true;
};

// ---------------------------------------------------------------- labels (the server's page)
// A person's verdict per agent and criterion: agree or disagree with the agent's verdict,
// or their own score, with a note; sent as JSON to the page's own server (conf.post).
var PAGE_LABELS = 50, WHO_KEY = "tracejudge.who";
function labelText(l) {
  var said = l.stance === "score" ? "own score " + scoreText(l.score) :
    l.stance + "d (" + l.verdict + ")";
  return l.who + ": " + said + (l.note ? " · " + l.note : "") + " · " + l.when;
}
function LabelBoard(box, t, conf) {
  var self = this, items = [];
  this.t = t; this.conf = conf; this.byItem = {}; this.shows = [];
  conf.labels.forEach(function (l) { self.keep(l); });
  t.results.forEach(function (r) {
    r.agents.forEach(function (a) { items.push({r: r, a: a}); });
  });
  // The failing results first (the ones a person most needs to check), then the rest,
  // each group in the trace's order.
  function failing(item) {
    var a = item.a;
    return known(a.score) && !known(a.not_evaluated) && a.score < item.r.bar ? 0 : 1;
  }
  items = items.map(function (item, n) { return {item: item, n: n}; }).sort(function (x, y) {
    return failing(x.item) - failing(y.item) || x.n - y.n;
  }).map(function (x) { return x.item; });
  box.id = "labels";
  add(box, el("p", "note", "Your verdict on each agent's result: agree or disagree with it, " +
    "or give your own score (0 to 1), with a note. Labels are kept on this server; export " +
    "them for tracejudge calibrate from /api/v1/labels/export."));
  if (!known(conf.who)) {
    var who = add(box, el("label", "who", "your name "));
    this.name = add(who, el("input"));
    this.name.id = "tj-who";
    this.name.placeholder = "who is labelling";
    this.name.addEventListener("input", function () {
      self.shows.forEach(function (show) { show(); });  // whose choices show as chosen
    });
    try { this.name.value = localStorage.getItem(WHO_KEY) || ""; } catch (e) {}
  } else {
    add(box, el("p", "facts", "labelling as " + conf.who + " (your API key's name)"));
  }
  if (!items.length) { add(box, el("p", "na", "Nothing was scored: nothing to label.")); return; }
  new Pager(add(box, el("div", "labels")), items.length, PAGE_LABELS, function (n, list) {
    list.appendChild(self.row(items[n].r, items[n].a));
  }, "results").show(0);
}
LabelBoard.prototype.key = function (instance, criterion) { return instance + "\n" + criterion; };
LabelBoard.prototype.keep = function (l) {
  var key = this.key(l.agent_instance_id, l.criterion), list = this.byItem[key] || [];
  this.byItem[key] = list.filter(function (o) { return o.who !== l.who; }).concat([l]);
};
LabelBoard.prototype.row = function (r, a) {
  var self = this, t = this.t, instance = this.conf.instances[a.agent];
  var row = el("div", "label-row");
  row.dataset.agent = instance;
  row.dataset.criterion = r.criterion;
  var what = add(row, el("div", "label-what"));
  add(what, el("b", null, t.agents[a.agent].name));
  txt(what, " · ");
  var crit = add(what, el("span", null, r.criterion.length > 120 ? r.criterion.slice(0, 119) + "…" : r.criterion));
  crit.title = r.criterion;
  var judged = known(a.score) && !known(a.not_evaluated);
  var verdict = !judged ? (known(a.not_evaluated) ? "not evaluated" : "not applicable") :
    scoreText(a.score) + (a.score < r.bar ? " fail" : " pass");
  txt(what, " · verdict ");
  add(what, el("span", "score " + (judged ? scoreClass(a.score, r.bar) : "na"), verdict));
  var controls = add(row, el("div", "label-controls"));
  function button(cls, text) {
    var b = add(controls, el("button", cls, text));
    b.type = "button";
    return b;
  }
  var agree = button("agree", "agree"), disagree = button("disagree", "disagree");
  agree.disabled = disagree.disabled = !judged;
  if (judged && a.score < r.bar) row.classList.add("failing");
  var own = add(controls, el("input", "own"));
  own.type = "number"; own.min = "0"; own.max = "1"; own.step = "0.05";
  own.placeholder = "your score";
  var save = button("save-score", "save score");
  var note = add(controls, el("input", "note-in"));
  note.placeholder = "note (optional)";
  var status = add(row, el("div", "label-status"));
  var saved = add(row, el("div", "label-saved"));
  function mine() {
    // Whose labels this page shows as chosen: the API key's name, else the name typed.
    var who = known(self.conf.who) ? self.conf.who : (self.name ? self.name.value.trim() : "");
    return (self.byItem[self.key(instance, r.criterion)] || []).filter(function (l) {
      return who && l.who === who;
    })[0];
  }
  function show() {
    saved.textContent = "";
    (self.byItem[self.key(instance, r.criterion)] || []).forEach(function (l) {
      add(saved, el("div", null, labelText(l)));
    });
    // The stance chosen shown as chosen (pressed), the other not.
    var chosen = mine(), stance = chosen ? chosen.stance : null;
    [[agree, "agree"], [disagree, "disagree"], [save, "score"]].forEach(function (pair) {
      pair[0].classList.toggle("chosen", stance === pair[1]);
      pair[0].setAttribute("aria-pressed", stance === pair[1] ? "true" : "false");
    });
    if (stance === "score" && own.value === "") own.value = String(chosen.score);
  }
  this.shows.push(show);
  function send(stance) {
    var body = {agent_instance_id: instance, criterion: r.criterion, stance: stance};
    if (stance === "score") {
      var given = own.value === "" ? NaN : Number(own.value);
      if (!(given >= 0 && given <= 1)) {
        status.className = "label-status bad";
        status.textContent = "not saved: give a score from 0 to 1" +
          (own.value === "" ? "" : " (" + own.value + " is not one)");
        return;
      }
      body.score = given;
    }
    if (note.value.trim()) body.note = note.value.trim();
    if (self.name) {
      body.who = self.name.value.trim();
      if (!body.who) { status.className = "label-status bad"; status.textContent = "not saved: give your name above first"; return; }
      try { localStorage.setItem(WHO_KEY, body.who); } catch (e) {}
    }
    status.className = "label-status note";
    status.textContent = "saving…";
    // From the origin: a page opened at a URL with credentials in it resolves relative
    // addresses with them, which fetch refuses; the browser adds what it signed in with.
    fetch(location.origin + self.conf.post, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)
    }).then(function (res) {
      return res.json().then(function (answer) { return {ok: res.ok, answer: answer}; });
    }).then(function (got) {
      if (!got.ok) throw new Error(got.answer.detail || "not saved");
      self.keep(got.answer);
      status.className = "label-status good";
      status.textContent = "saved";
      show();
    }).catch(function (error) {
      status.className = "label-status bad";
      status.textContent = "not saved: " + error.message;
    });
  }
  agree.addEventListener("click", function () { send("agree"); });
  disagree.addEventListener("click", function () { send("disagree"); });
  save.addEventListener("click", function () { send("score"); });
  show();
  return row;
};

// ---------------------------------------------------------------- the pages
function json(id) { var n = document.getElementById(id); return n ? JSON.parse(n.textContent) : null; }

function onJumps(go) {
  // A link to a part of a trace reveals it, also when the fragment is already the link's.
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[data-anchor]") : null;
    if (a) go(a.dataset.anchor);
  });
  window.addEventListener("hashchange", function () { go(fragment()); });
}

// A trace's own spans (the server's page of a trace that came as spans): each with its
// name, kind, time and status, folded; unfolded, its attributes and events, as recorded.
var PAGE_SPANS = 100;
function spanSection(box, data) {
  var spans = data.spans;
  add(box, el("p", "note", plural(spans.length, "span") + " as recorded" +
    (data.left_out ? " (" + data.left_out + " more left out to keep the page small)" : "") +
    ": each one's own attributes and events (a model call's or a tool run's input and output as its span holds them)."));
  new Pager(add(box, el("div", "spans")), spans.length, PAGE_SPANS, function (n, list) {
    var s = spans[n], d = add(list, el("details", "span"));
    d.id = "span-" + s.id;
    d.dataset.n = n;
    d.style.marginLeft = Math.min(s.depth, 12) * 14 + "px";
    var parts = [s.name];
    if (s.kind) parts.push(s.kind.toLowerCase().replace("span_kind_", ""));
    if (known(s.dur)) parts.push(ms(s.dur));
    if (known(s.t0)) parts.push("at +" + ms(s.t0));
    if (s.status && s.status !== "UNSET" && s.status !== "STATUS_CODE_UNSET") parts.push(s.status.toLowerCase());
    if (s.scope) parts.push(s.scope);
    add(d, el("summary", null, parts.join(" · ")));
    d.addEventListener("toggle", function () {
      if (!d.open || d.dataset.filled) return;
      d.dataset.filled = "1";
      var table = add(d, el("table", "attrs"));
      s.attrs.forEach(function (kv) {
        var tr = add(table, el("tr"));
        add(tr, el("th", null, kv[0]));
        add(tr, el("td", null, kv[1]));
      });
      if (!s.attrs.length) add(d, el("div", "na", "no attributes"));
      s.events.forEach(function (ev) {
        var e = add(d, el("div", "event"));
        add(e, el("b", null, "event " + ev[0]));
        ev[1].forEach(function (kv) { add(e, el("div", "io", kv[0] + ": " + kv[1])); });
      });
    });
  }, "spans").show(0);
}

function tracePage(box, t) {
  var view = new TraceView(t, ""), conf = json("tj-labels"), spans = json("tj-spans");
  if (spans) spanSection(section(view.root, "Spans"), spans);
  if (conf) new LabelBoard(section(view.root, "Labels"), t, conf);
  box.appendChild(view.root);
  function go(anchor) { if (anchor) view.reveal(anchor); }
  onJumps(go);
  go(fragment());
}

function reportPage(list, data) {
  var filter = document.getElementById("tj-filter"), failing = document.getElementById("tj-failing");
  var pageLabel = document.getElementById("tj-page"), page = 0, shown = data, views = {};
  function text(t) {
    var parts = [t.id, t.source || ""];
    t.agents.forEach(function (a) {
      parts.push(a.name);
      (a.calls || []).forEach(function (c) {
        if (c) c.in.concat(c.out, c.results || []).forEach(function (m) { parts.push(m[2]); });
      });
    });
    t.results.forEach(function (r) {
      parts.push(r.criterion, r.explanation);
      r.agents.forEach(function (a) { parts.push(a.explanation, a.not_evaluated || ""); });
    });
    return parts.join("\n").toLowerCase();
  }
  function entry(t, open) {
    var d = el("details", "trace"), s = add(d, el("summary"));
    d.id = "trace-" + t.id;
    add(s, el("span", "score " + (t.failing ? "bad" : scoreClass(t.worst, 0)), scoreText(t.worst)));
    txt(s, " trace " + t.id + (t.source ? " (" + t.source + ")" : "") + " · " + plural(t.agents.length, "agent") + " · ");
    t.results.forEach(function (r) {
      var low = null;
      r.agents.forEach(function (a) { if (known(a.score) && (low === null || a.score < low)) low = a.score; });
      add(s, el("span", "score " + scoreClass(low, r.bar), r.criterion + " " + scoreText(low) + " "));
    });
    var cause = t.attribution && t.attribution.causes[0];
    if (cause) {
      add(s, el("span", "cause-mark", "· cause: " + t.agents[cause.agent].name +
        (cause.step ? ", call " + (cause.step[1] + 1) : "")));
    }
    function fill() {
      if (views[t.id]) return views[t.id];
      var view = new TraceView(t, "trace-" + t.id + "/");
      views[t.id] = view;
      d.appendChild(view.root);
      return view;
    }
    d.addEventListener("toggle", function () { if (d.open) fill(); });
    d.fill = fill;
    if (open) { d.open = true; fill(); }
    return d;
  }
  // "#trace-ID" names a trace, "#trace-ID/step-K-I" (and agent-K, calls-K) a part of it.
  function wanted(anchor) {
    if (anchor.indexOf("trace-") !== 0) return null;
    var rest = anchor.slice(6), cut = rest.lastIndexOf("/");
    var ids = cut >= 0 ? [rest.slice(0, cut), rest] : [rest];
    for (var n = 0; n < ids.length; n++) {
      for (var at = 0; at < data.length; at++) if (data[at].id === ids[n]) return data[at];
    }
    return null;
  }
  function render(openId) {
    list.textContent = "";
    views = {};
    var pages = Math.max(1, Math.ceil(shown.length / PAGE_TRACES));
    if (page >= pages) page = pages - 1;
    shown.slice(page * PAGE_TRACES, (page + 1) * PAGE_TRACES).forEach(function (t, i) {
      list.appendChild(entry(t, openId !== undefined ? t.id === openId : i === 0 && page === 0));
    });
    pageLabel.textContent = "page " + (page + 1) + " of " + pages + " · " + shown.length + " of " + data.length + " traces";
  }
  function go(anchor) {
    var t = wanted(anchor);
    if (!t) return;
    var at = shown.indexOf(t);
    if (at < 0) { shown = data; filter.value = ""; failing.checked = false; at = data.indexOf(t); }
    if (Math.floor(at / PAGE_TRACES) !== page || !document.getElementById("trace-" + t.id)) {
      page = Math.floor(at / PAGE_TRACES);
      render(t.id);
    }
    var d = document.getElementById("trace-" + t.id);
    d.open = true;
    var view = d.fill();
    if (!view.reveal(anchor)) d.scrollIntoView({block: "start"});
  }
  function apply() {
    var q = filter.value.trim().toLowerCase(), only = failing.checked;
    shown = data.filter(function (t) {
      if (only && !t.failing) return false;
      if (!q) return true;
      if (t._text === undefined) t._text = text(t);
      return t._text.indexOf(q) >= 0;
    });
    page = 0;
    render();
  }
  filter.addEventListener("input", apply);
  failing.addEventListener("change", apply);
  document.getElementById("tj-prev").addEventListener("click", function () { if (page > 0) { page--; render(); } });
  document.getElementById("tj-next").addEventListener("click", function () {
    if ((page + 1) * PAGE_TRACES < shown.length) { page++; render(); }
  });
  onJumps(go);
  var first = wanted(fragment());
  if (first) go(fragment()); else render();
}

var data = json("tj-data") || [], one = document.getElementById("tj-trace");
if (one && data.length) tracePage(one, data[0]);
var list = document.getElementById("tj-list");
if (list) reportPage(list, data);
})();
