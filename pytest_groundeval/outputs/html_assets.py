"""The HTML report's own markup, style sheet and script (``outputs.html`` inlines them; docs/ci.md).

The content security policy allows exactly these: the page hashes ``STYLE`` and ``SCRIPT``.
"""

ITEMS_SECTION = """<section id="items"><h2>Items</h2>
<div class="filters">
<label>kind <select id="f-kind"><option value="">all</option></select></label>
<label>tag <select id="f-tag"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option><option>pass</option><option>fail</option><option>error</option></select></label>
<label>search <input id="f-search" type="search" placeholder="id, detail, question, answer"></label>
<span id="f-pair" hidden>showing items with <span id="f-pair-text"></span> <button id="f-pair-clear" type="button">clear</button></span>
<span id="f-count" class="note"></span>
</div>
<noscript><p class="warn">The item table needs JavaScript; the gate and charts above do not.</p></noscript>
<table class="grid" id="items-table"><thead><tr>
<th data-sort="id" aria-sort="none">id</th><th data-sort="kind" aria-sort="none">kind</th>
<th data-sort="outcome" aria-sort="none">outcome</th><th data-sort="latencyMs" aria-sort="none">latency ms</th>
<th data-sort="tokens" aria-sort="none">tokens</th><th>detail</th></tr></thead><tbody></tbody></table>
<p><button id="more" type="button" hidden>show more</button></p>
</section>"""

STYLE = """
:root{--pass:#1a7f37;--fail:#cf222e;--error:#9a6700;--skip:#6e7781;--info:#0969da;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--track:#eef1f4}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1180px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.facts{display:flex;flex-wrap:wrap;gap:4px 20px;margin:6px 0}.facts div{display:flex;gap:6px}.facts dt{color:var(--muted)}.facts dd{margin:0;font-family:ui-monospace,monospace}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}.big{font-size:15px;vertical-align:middle}
.b-pass{background:var(--pass)}.b-fail{background:var(--fail)}.b-error{background:var(--error)}.b-skip{background:var(--skip)}.b-info{background:var(--info)}
table.grid{border-collapse:collapse;width:100%}.grid th,.grid td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
.grid th[data-sort]{cursor:pointer;user-select:none}.grid th[aria-sort=ascending]::after{content:" ▲"}.grid th[aria-sort=descending]::after{content:" ▼"}
table.narrow{width:auto;min-width:480px}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#items-table tbody tr.row{cursor:pointer}#items-table tbody tr.row:hover{background:#f6f8fa}tr.open{background:#f6f8fa}
td.detail{max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;color:var(--muted)}
.filters{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin-bottom:8px}input[type=search]{width:260px}
.note{color:var(--muted)}.warn{color:var(--fail);font-weight:600}
svg.chart{display:block;max-width:100%;height:auto}.lbl{font-size:12px;fill:var(--fg)}.tick{font-size:11px;fill:var(--muted)}
.track{fill:var(--track)}.bar-pass{fill:var(--pass)}.bar-fail{fill:var(--fail)}.bar-error{fill:var(--error)}.bar-skip{fill:var(--skip)}.bar-info{fill:var(--info)}.bar-hist{fill:var(--info)}
.bound{stroke:var(--fg);stroke-width:2}.zero{stroke:var(--muted);stroke-width:1}.ci{stroke:var(--fg);stroke-width:1.5}.axis{stroke:var(--muted)}.mark{stroke-width:1.5;stroke-dasharray:4 3}.p50{stroke:var(--pass);fill:var(--pass)}.p95{stroke:var(--error);fill:var(--error)}
.o-pass{fill:var(--pass)}.o-fail{fill:var(--fail)}.o-skip{fill:var(--skip)}.o-info{fill:var(--info)}
.line{fill:none;stroke:var(--info);stroke-width:2}.pt{fill:var(--info)}.trends{display:flex;flex-wrap:wrap;gap:12px}figure.trend{margin:0;border:1px solid var(--line);border-radius:6px;padding:4px}
.panel{padding:8px 12px 14px;border-left:3px solid var(--info)}.panel h3{font-size:13px;margin:10px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.panel pre,.answer{white-space:pre-wrap;word-break:break-word;font:13px/1.5 ui-monospace,monospace;background:#f6f8fa;padding:8px;border-radius:4px;margin:0}
.answer{font-family:inherit;font-size:14px}.claim{border-bottom:2px solid;padding:0 1px}
.claim.t-good{background:#dafbe1;border-color:var(--pass)}.claim.t-warn{background:#fff8c5;border-color:var(--error)}.claim.t-bad{background:#ffebe9;border-color:var(--fail)}.claim.t-neutral{background:#eef1f4;border-color:var(--skip)}
.chip{display:inline-block;padding:0 6px;border-radius:4px;color:#fff;font-size:12px;font-weight:600;line-height:18px;white-space:nowrap}
.chip.t-good,.swatch.t-good{background:var(--pass)}.chip.t-warn,.swatch.t-warn{background:var(--error)}.chip.t-bad,.swatch.t-bad{background:var(--fail)}.chip.t-neutral,.swatch.t-neutral{background:var(--skip)}
.bar-good{fill:var(--pass)}.bar-warn{fill:var(--error)}.bar-bad{fill:var(--fail)}.bar-neutral{fill:var(--skip)}
.confusion th,.confusion td{text-align:center}.confusion td.agree{background:#dafbe1}.confusion td.disagree{background:#ffebe9;font-weight:600}.confusion td.empty{color:var(--muted)}
table.paras td:nth-child(2){min-width:280px}table.paras td.note{max-width:320px}table.paras td.human{white-space:nowrap}table.paras td.juror{min-width:140px}.panel table.paras{margin:0}
ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 18px;padding:0;margin:6px 0 0;font-size:13px}.legend li{display:flex;align-items:center;gap:6px}.lv{font-weight:600}.swatch{display:inline-block;width:12px;height:12px;border-radius:2px}
.panel ul{margin:0;padding-left:20px}.found{color:var(--pass);font-weight:600}.missing{color:var(--fail);font-weight:600}.delta-better{color:var(--pass)}.delta-worse{color:var(--fail)}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ge-data").textContent);
  var items = data.items, PAGE = 500, RANK = {};
  data.outcomeOrder.forEach(function (o, i) { RANK[o] = i; });
  var state = {kind: "", tag: "", outcome: "", q: "", pair: "", key: null, dir: 1, limit: PAGE};
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function tone(v) { return Object.prototype.hasOwnProperty.call(data.tones, v) ? data.tones[v] : "neutral"; }
  function vclass(v) { return "t-" + tone(v) + " v-" + v.replace(/[^A-Za-z_]/g, ""); }
  function legend(verdicts) {
    var ul = el("ul", "legend"), seen = {};
    verdicts.forEach(function (v) {
      if (seen[v]) return; seen[v] = 1;
      var li = el("li"); li.appendChild(el("span", "swatch t-" + tone(v))); li.appendChild(el("span", "lv", v));
      li.appendChild(document.createTextNode(Object.prototype.hasOwnProperty.call(data.meanings, v) ? data.meanings[v] : ""));
      ul.appendChild(li);
    });
    return ul;
  }
  function fmt(v, digits) { return v === null || v === undefined ? "n/a" : Number(v).toFixed(digits); }
  function options(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  var kinds = [], tags = [];
  items.forEach(function (it) {
    if (kinds.indexOf(it.kind) < 0) kinds.push(it.kind);
    it.tags.forEach(function (t) { if (tags.indexOf(t) < 0) tags.push(t); });
    it.hay = [it.id, it.kind, it.outcome, it.detail, it.error, it.question, it.tags.join(" "),
      (it.segments || []).map(function (s) { return s[0]; }).join("")].join("\n").toLowerCase();
  });
  options($("f-kind"), kinds); options($("f-tag"), tags.sort());
  if (!tags.length) $("f-tag").disabled = true;

  function visible() {
    var q = state.q.toLowerCase();
    var rows = items.filter(function (it) {
      return (!state.kind || it.kind === state.kind) && (!state.outcome || it.outcome === state.outcome) &&
        (!state.tag || it.tags.indexOf(state.tag) >= 0) && (!q || it.hay.indexOf(q) >= 0) &&
        (!state.pair || (it.pairs || []).indexOf(state.pair) >= 0);
    });
    if (state.key) {
      var k = state.key, d = state.dir;
      rows.sort(function (a, b) {
        var x = k === "outcome" ? RANK[a.outcome] : a[k], y = k === "outcome" ? RANK[b.outcome] : b[k];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * d;
      });
    }
    return rows;
  }
  function section(panel, title, node) { panel.appendChild(el("h3", null, title)); panel.appendChild(node); }
  function list(entries, render) {
    var ul = el("ul");
    entries.forEach(function (e) { var li = el("li"); render(li, e); ul.appendChild(li); });
    return ul;
  }
  function detail(it) {
    var p = el("div", "panel");
    var reason = it.error ? "error: " + it.error : it.detail;
    section(p, it.outcome === "pass" ? "result" : "why it " + (it.outcome === "error" ? "errored" : "failed"), el("pre", null, reason || "(no detail)"));
    if (it.question) section(p, "question", el("pre", null, it.question));
    if (it.segments) {
      var a = el("div", "answer");
      it.segments.forEach(function (s) {
        if (s[1] < 0) { a.appendChild(document.createTextNode(s[0])); return; }
        var c = it.claims[s[1]], span = el("span", "claim " + vclass(c.verdict), s[0]);
        span.title = c.verdict + (c.true === true ? " (true)" : c.true === false ? " (not true)" : "");
        a.appendChild(span);
      });
      section(p, it.claims ? "answer (claims marked by verdict)" : "answer", a);
      if (it.claims) a.parentNode.insertBefore(legend(it.claims.map(function (c) { return c.verdict; })), a.nextSibling);
    }
    if (it.claims) section(p, "claims", list(it.claims, function (li, c) {
      li.appendChild(el("span", "chip " + vclass(c.verdict), c.verdict));
      li.appendChild(document.createTextNode(" " + c.text + (c.markers.length ? "  [" + c.markers.join(", ") + "]" : "") +
        (c.true === true ? "  — true" : c.true === false ? "  — not true" : "")));
    }));
    if (it.evidence) section(p, "retrieved evidence", list(it.evidence, function (li, e) {
      li.appendChild(el("b", null, "[" + e.marker + "] "));
      li.appendChild(document.createTextNode(e.document + (e.start !== null && e.start !== undefined ? " bytes " + e.start + "–" + e.end : "") + ": "));
      li.appendChild(el("pre", null, e.text || ""));
    }));
    if (it.expected) section(p, "expected evidence", list(it.expected, function (li, e) {
      li.appendChild(el("span", e.found === true ? "found" : e.found === false ? "missing" : "note",
        e.found === true ? "found " : e.found === false ? "not retrieved " : "? "));
      li.appendChild(document.createTextNode(e.text));
    }));
    if (it.truths) section(p, "truths", list(it.truths, function (li, t) { li.textContent = t; }));
    if (it.paragraphs) section(p, "citation paragraphs" + (it.paragraphs[0].judge ? " (judge: " + it.paragraphs[0].judge + ")" : ""), paragraphs(it.paragraphs));
    if (it.review) {
      var r = it.review, box = el("div");
      box.appendChild(el("div", null, "score " + fmt(r.score, 3) + " (min " + fmt(r.minScore, 3) + ") " + (r.passed ? "passed" : "failed") + ": " + r.reason));
      box.appendChild(list(r.findings, function (li, f) {
        li.textContent = f.check + " " + f.claimId + ": " + f.verdict + " — " + f.reason + (f.suggestedRewrite ? " (rewrite: " + f.suggestedRewrite + ")" : "");
      }));
      section(p, "evidence risk", box);
    }
    var figs = Object.keys(it.counts).map(function (k) { return k + " " + it.counts[k]; });
    if (it.latencyMs !== null) figs.push("latency " + fmt(it.latencyMs, 1) + " ms");
    if (it.tokens !== null) figs.push(it.tokens + " tokens");
    if (it.traceId) figs.push("traceId " + it.traceId);
    if (it.tags.length) figs.push("tags " + it.tags.join(", "));
    if (figs.length) section(p, "figures", el("div", null, figs.join(" · ")));
    if (it.other) section(p, "other figures", el("pre", null, it.other));
    return p;
  }
  function chip(v) { return el("span", "chip " + vclass(v), v); }
  function paragraphs(ps) {
    var human = ps.some(function (g) { return g.expected !== undefined; }), jurors = [];
    ps.forEach(function (g) { (g.judges || []).forEach(function (j) { if (jurors.indexOf(j.model) < 0) jurors.push(j.model); }); });
    var table = el("table", "grid paras"), head = el("tr"), body = el("tbody");
    ["¶", "paragraph"].concat(human ? ["human label"] : []).concat(["judge", "rationale"]).forEach(function (h) { head.appendChild(el("th", null, h)); });
    jurors.forEach(function (m) { head.appendChild(el("th", "juror", m)); });
    ps.forEach(function (g) {
      var tr = el("tr"), text = el("td");
      tr.appendChild(el("td", "num", g.index));
      text.appendChild(document.createTextNode(g.text + (g.markers.length ? "  [" + g.markers.join(", ") + "]" : "")));
      g.problems.forEach(function (t) { text.appendChild(el("div", "missing", t)); });
      tr.appendChild(text);
      if (human) {
        var h = el("td", "human");
        if (g.expected === undefined) h.textContent = "—";
        else {
          var same = g.expected === g.verdict;
          h.appendChild(chip(g.expected));
          h.appendChild(el("span", same ? "found" : "missing", same ? " ✓ agrees" : " ✗ differs"));
        }
        tr.appendChild(h);
      }
      var v = el("td", "verdict"); v.appendChild(chip(g.verdict)); tr.appendChild(v);
      tr.appendChild(el("td", "note", g.rationale || ""));
      jurors.forEach(function (m) {
        var td = el("td", "juror"), j = (g.judges || []).filter(function (x) { return x.model === m; })[0];
        if (!j) td.textContent = "—";
        else { td.appendChild(chip(j.verdict)); if (j.rationale || j.error) td.appendChild(el("div", "note", j.rationale || j.error)); }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead); table.appendChild(body);
    return table;
  }
  function toggle(tr, it) {
    var next = tr.nextSibling;
    if (next && next.className === "panel-row") { next.parentNode.removeChild(next); tr.classList.remove("open"); return; }
    var row = el("tr", "panel-row"), td = el("td");
    td.colSpan = 6; td.appendChild(detail(it)); row.appendChild(td);
    tr.parentNode.insertBefore(row, next); tr.classList.add("open");
  }
  function render() {
    var rows = visible(), body = document.querySelector("#items-table tbody"), frag = document.createDocumentFragment();
    rows.slice(0, state.limit).forEach(function (it) {
      var tr = el("tr", "row o-" + it.outcome);
      tr.dataset.id = it.id; tr.dataset.kind = it.kind; tr.dataset.outcome = it.outcome;
      tr.appendChild(el("td", null, it.id)); tr.appendChild(el("td", null, it.kind));
      var o = el("td"); o.appendChild(el("span", "badge b-" + it.outcome, it.outcome)); tr.appendChild(o);
      tr.appendChild(el("td", "num", it.latencyMs === null ? "" : fmt(it.latencyMs, 1)));
      tr.appendChild(el("td", "num", it.tokens === null ? "" : it.tokens));
      var d = el("td", "detail", it.error || it.detail || ""); d.title = it.error || it.detail || ""; tr.appendChild(d);
      tr.addEventListener("click", function () { toggle(tr, it); });
      frag.appendChild(tr);
    });
    body.textContent = ""; body.appendChild(frag);
    $("f-count").textContent = "showing " + Math.min(rows.length, state.limit) + " of " + rows.length + " matching (" + items.length + " items)";
    $("more").hidden = rows.length <= state.limit;
    $("f-pair").hidden = !state.pair;
    $("f-pair-text").textContent = state.pair ? "a paragraph labelled " + state.pair.replace("|", " by the human and ") + " by the judge" : "";
  }
  function on(id, ev, key) {
    $(id).addEventListener(ev, function (e) { state[key] = e.target.value; state.limit = PAGE; render(); });
  }
  on("f-kind", "change", "kind"); on("f-tag", "change", "tag"); on("f-outcome", "change", "outcome"); on("f-search", "input", "q");
  $("more").addEventListener("click", function () { state.limit += PAGE; render(); });
  Array.prototype.forEach.call(document.querySelectorAll("#items-table th[data-sort]"), function (th) {
    th.addEventListener("click", function () {
      var key = th.dataset.sort;
      state.dir = state.key === key ? -state.dir : 1; state.key = key;
      Array.prototype.forEach.call(document.querySelectorAll("#items-table th[data-sort]"), function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    });
  });
  render();
  function openItem(id) {
    state.kind = state.tag = state.outcome = state.q = state.pair = ""; state.key = null;
    ["f-kind", "f-tag", "f-outcome", "f-search"].forEach(function (f) { $(f).value = ""; });
    Array.prototype.forEach.call(document.querySelectorAll("#items-table th[data-sort]"), function (h) { h.setAttribute("aria-sort", "none"); });
    var rows = visible(), at = -1;
    rows.forEach(function (it, i) { if (at < 0 && it.id === id) at = i; });
    if (at < 0) return;
    state.limit = Math.max(PAGE, at + 1); render();
    var tr = document.querySelectorAll("#items-table tbody tr.row")[at];
    toggle(tr, rows[at]); tr.scrollIntoView();
  }
  Array.prototype.forEach.call(document.querySelectorAll("a[data-pair]"), function (a) {
    a.addEventListener("click", function (e) {
      e.preventDefault(); state.pair = a.dataset.pair; state.limit = PAGE; render(); $("items").scrollIntoView();
    });
  });
  $("f-pair-clear").addEventListener("click", function () { state.pair = ""; state.limit = PAGE; render(); });
  Array.prototype.forEach.call(document.querySelectorAll("a[data-open]"), function (a) {
    a.addEventListener("click", function (e) { e.preventDefault(); openItem(a.dataset.open); });
  });

  if (data.runs && $("cmp-a")) {
    var runs = data.runs, a = $("cmp-a"), b = $("cmp-b");
    runs.forEach(function (r, i) {
      [a, b].forEach(function (s) { var o = el("option", null, r.id + " — " + r.startedAt); o.value = i; s.appendChild(o); });
    });
    a.value = Math.max(runs.length - 2, 0); b.value = runs.length - 1;
    var compare = function () {
      var ra = runs[a.value].metrics, rb = runs[b.value].metrics, body = document.querySelector("#cmp tbody");
      body.textContent = "";
      data.metricNames.forEach(function (m) {
        var x = ra[m], y = rb[m];
        if ((x === null || x === undefined) && (y === null || y === undefined)) return;
        var tr = el("tr"), delta = (typeof x === "number" && typeof y === "number") ? y - x : null;
        tr.appendChild(el("td", null, m));
        tr.appendChild(el("td", "num", typeof x === "number" ? x.toFixed(4) : "n/a"));
        tr.appendChild(el("td", "num", typeof y === "number" ? y.toFixed(4) : "n/a"));
        var better = delta === null || delta === 0 ? "" : ((delta > 0) === (data.higherIsBetter[m] === true) ? "delta-better" : "delta-worse");
        tr.appendChild(el("td", "num " + better, delta === null ? "" : (delta > 0 ? "+" : "") + delta.toFixed(4)));
        body.appendChild(tr);
      });
    };
    a.addEventListener("change", compare); b.addEventListener("change", compare); compare();
  }
  performance.mark("groundeval-rendered");
  document.body.dataset.ready = "1";
})();
"""
