"""``failforge report``: one self-contained HTML file with the dataset's numbers and a record viewer.

Self-contained means opened from disk with no network: styles, charts (inline SVG drawn here) and
the viewer's script are all in the file, and the records are embedded as JSON. The viewer shows a
record the way a reviewer needs to judge it: the seed and the branch side by side, the shared prefix
collapsed and marked identical (with the hash of its comparable fields, computed for both), the
decisive step highlighted with the original and the injected action, the note, every filter
verdict, the conformance verdict and the evaluator's output. Step text is cut at a fixed length so
a dataset of thousands of records stays a file a browser opens quickly.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from failforge.report._dataset import Dataset, Record, prefix_hash
from failforge.report._screenshot import decisive_screenshot
from failforge.report._summary import describe_realism, summarise
from failforge.trajectory import Step

TEXT_LIMIT = 1500


def compact_step(step: Step, limit: int = TEXT_LIMIT) -> dict[str, Any]:
    text = step.error if step.kind == "tool" and step.error else (step.content or "")
    out: dict[str, Any] = {"i": step.index, "k": step.kind, "a": step.agent, "c": text[:limit], "ph": step.phase}
    if len(text) > limit:
        out["x"] = len(text) - limit
    if step.tool_calls:
        out["calls"] = [[c.name, c.arguments[:limit]] for c in step.tool_calls]
    if step.tool_name:
        out["tool"] = step.tool_name
    if step.error:
        out["err"] = 1
    return out


def _record_json(ds: Dataset, record: Record, seeds_out: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    seed = ds.seed_for(record)
    t = record.step
    prefix: dict[str, Any] | None = None
    if seed is not None:
        key = seed.id if seed.id in ds.seeds else f"{seed.id}#prefix"
        if key not in seeds_out or len(seeds_out[key]) < len(seed.steps):
            seeds_out[key] = [compact_step(s) for s in seed.steps]
        seed_key: str | None = key
        if record.branch is not None:
            seed_hash, branch_hash = prefix_hash(seed.steps[:t]), prefix_hash(record.branch.steps[:t])
            prefix = {"n": t, "seed_hash": seed_hash, "branch_hash": branch_hash, "same": seed_hash == branch_hash}
    else:
        seed_key = None
    conformance = record.conformance
    return {
        "id": record.record_id,
        "attempt": record.attempt_id,
        "status": record.status,
        "mode": record.mode,
        "family": record.family,
        "seed": record.seed_id,
        "seed_key": seed_key,
        "t": t,
        "env": record.environment,
        "agent": record.agent,
        "stage": record.stage,
        "reasons": record.reasons,
        "verdicts": record.verdicts,
        "note": record.note,
        "guide": record.guide_kind,
        "conf": (
            None
            if conformance is None
            else {
                "exhibited": conformance.get("exhibited"),
                "method": conformance.get("method"),
                "reason": conformance.get("reason"),
                "judge": (
                    None
                    if not conformance.get("judge")
                    else {
                        "model": conformance["judge"].get("model"),
                        "rationale": conformance["judge"].get("rationale"),
                    }
                ),
            }
        ),
        "evaluator": record.evaluator,
        "decisiveness": record.decisiveness,
        "error": record.error,
        "prefix": prefix,
        "original": compact_step(record.original) if record.original is not None else None,
        "branch": [compact_step(s) for s in record.branch.steps[t:]] if record.branch is not None else None,
        "task": (
            record.branch.task.instruction if record.branch is not None else (seed.task.instruction if seed else "")
        )[:TEXT_LIMIT],
        "screenshot": decisive_screenshot(
            record.original,
            record.branch.steps[t] if record.branch is not None and len(record.branch.steps) > t else None,
        ),
    }


def _bars(title: str, counts: dict[str, int], *, colour: str = "#3b6ea8", test_id: str = "") -> str:
    """A horizontal bar chart as inline SVG (no script, no library)."""
    items = [(str(k), int(v)) for k, v in counts.items()]
    attrs = f' data-chart="{html.escape(test_id)}"' if test_id else ""
    if not items:
        return (
            f'<figure class="chart"{attrs}><figcaption>{html.escape(title)}</figcaption><p'
            ' class="muted">none</p></figure>'
        )
    top = max(v for _, v in items) or 1
    row, label_w, bar_w = 22, 190, 260
    height = row * len(items) + 6
    parts = [f'<svg width="{label_w + bar_w + 60}" height="{height}" role="img" aria-label="{html.escape(title)}">']
    for i, (name, value) in enumerate(items):
        y = i * row + 3
        w = max(2, round(bar_w * value / top)) if value else 0
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{html.escape(name[:28])}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row - 8}"'
            f' fill="{colour}"><title>{html.escape(name)}: {value}</title></rect>'
        )
        parts.append(f'<text x="{label_w + w + 5}" y="{y + 15}">{value}</text>')
    parts.append("</svg>")
    return f'<figure class="chart"{attrs}><figcaption>{html.escape(title)}</figcaption>{"".join(parts)}</figure>'


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _conformance_table(conf: dict[str, Any]) -> str:
    rows = []
    for code, row in conf["by_mode"].items():
        judged = f"{row['by_judge']} ({html.escape(', '.join(row['judge_models']))})" if row["by_judge"] else "0"
        rows.append(
            f"<tr><td>{html.escape(code)}</td><td>{row['candidates']}</td><td>{row['exhibited']}</td><td>{row['not_exhibited']}</td><td>{row['unverified']}</td><td>{row['not_recorded']}</td><td>{row['by_rule']}</td><td>{judged}</td><td>{_pct(row['rate'])}</td><td>{row['kept_conformant']}"
            f" / {row['kept']}</td></tr>"
        )
    head = (
        "<tr><th>mode</th><th>candidates</th><th>exhibited</th><th>not exhibited</th><th>unverified</th><th>not"
        " recorded</th><th>by rule</th><th>by judge (model)</th><th>rate</th><th>kept conformant</th></tr>"
    )
    return (
        f'<table class="grid" id="conformance-table">{head}{"".join(rows)}</table>'
        if rows
        else '<p class="muted">no candidate produced a branch</p>'
    )


def _audit_table(audit: dict[str, Any] | None) -> str:
    if not audit:
        return (
            '<p class="muted">no fidelity audit in this folder (run <code>failforge audit SEEDS --json'
            " OUT/audit.json</code>, or pass <code>--audit</code>)</p>"
        )
    rows = []
    for env in audit.get("environments", []):
        drift = ", ".join(f"{k} {v}" for k, v in (env.get("drift_by_type") or {}).items()) or "none"
        rows.append(
            f"<tr><td>{html.escape(str(env.get('environment')))}</td><td>{env.get('seeds')}</td><td>{env.get('identical')}/{env.get('seeds')}</td>"
            f"<td>{html.escape(drift)}</td><td>{env.get('cache_misses')}</td><td>{env.get('infrastructure_errors')}</td>"
            f"<td>{env.get('evaluator_success_on_replay')}/{env.get('seeds')}</td></tr>"
        )
    head = (
        "<tr><th>environment</th><th>seeds</th><th>identical</th><th>drift by type</th><th>cache misses</th><th>infra"
        " errors</th><th>success on replay</th></tr>"
    )
    return f'<table class="grid" id="audit-table">{head}{"".join(rows)}</table>'


def _overview(ds: Dataset, s: dict[str, Any]) -> str:
    totals = s["totals"]
    conf = s["conformance"]
    dec = s["decisiveness"]
    models = ds.manifest.get("models") or {}
    realism = s.get("realism") or {}
    dec_line = (
        (
            f"{dec['passed']} of {dec['measured']} measured candidates passed; mean success"
            f" {dec['mean_original_success']:.2f} from a_t vs {dec['mean_injected_success']:.2f} from the injected step"
            if dec["measured"]
            else "not measured in this campaign"
        )
        + (
            f"; {dec['rejected_original_arm']} attempt(s) at {dec['non_decisive_points']} point(s) rejected because the"
            " seed's own step, continued live, also failed"
            if dec.get("rejected_original_arm")
            else ""
        )
        + (
            f"; {dec['gold_not_checked']} gold record(s) NOT checked (turned off)"
            if dec.get("gold_not_checked")
            else ""
        )
    )
    stats = [
        ("kept (gold)", totals["kept"], "kept"),
        ("rejected", totals["rejected"], "rejected"),
        ("failed", totals["failed"], "failed"),
        ("planned", totals.get("planned") if totals.get("planned") is not None else "–", "planned"),
        ("conformance (all candidates)", _pct(conf["rate"]), "conformance-rate"),
        ("kept conformant", f"{conf['kept_conformant']} / {conf['kept']}", "kept-conformant"),
    ]
    tiles = "".join(
        f'<div class="tile" data-stat="{k}"><div'
        f' class="num">{html.escape(str(v))}</div><div>{html.escape(n)}</div></div>'
        for n, v, k in stats
    )
    charts = "".join(
        [
            _bars(
                "attempts by outcome",
                {"kept": totals["kept"], "rejected": totals["rejected"], "failed": totals["failed"]},
                test_id="outcome",
            ),
            _bars(
                "rejections by reason (filter or stage)", s["rejection_reasons"], colour="#a8553b", test_id="reasons"
            ),
            _bars("failed by error", s["failed_by"], colour="#777", test_id="failed"),
            _bars("gold by mode", s["gold_by_mode"], test_id="mode"),
            _bars("gold by family", s["gold_by_family"], test_id="family"),
            _bars("gold by decisive step", s["gold_by_step"], test_id="step"),
            _bars("gold by decisive step position in the seed", s["gold_by_position"], test_id="position"),
            _bars("gold by decisive agent", s["gold_by_agent"], test_id="agent"),
            _bars("gold by environment", s["gold_by_environment"], test_id="environment"),
            _bars("attempts by guide kind", s["guide_kinds"], colour="#5b8a3b", test_id="guide"),
        ]
    )
    realism_lines = "".join(
        f"<li>{html.escape(label)}: {html.escape(describe_realism(realism[key]))}</li>"
        for key, label in (("gold", "gold records"), ("candidates", "all candidates with a branch"))
        if key in realism
    )
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in s.get("problems") or [])
    return f"""
<section id="overview">
  <p class="meta">config <code>{html.escape(str(ds.manifest.get("config_hash", "–")))}</code> · created {html.escape(str(ds.manifest.get("created_at", "–")))}
   · agent <code>{html.escape(str((models.get("agent") or {}).get("name", "–")))}</code> · guide <code>{html.escape(str((models.get("guide") or {}).get("name", "–")))}</code></p>
  <div class="tiles">{tiles}</div>
  <div class="charts">{charts}</div>
  <h2>Mode conformance</h2>
  <p>Does each candidate's decisive step exhibit its labelled mode? Structural modes are decided by rules; semantic modes by a judge when one was enabled.
   {conf["by_judge"]} verdict(s) came from a judge.</p>
  {_conformance_table(conf)}
  <h2>Decisiveness</h2><p id="decisiveness">{html.escape(dec_line)}</p>
  <h2>Realism probe</h2>
  <p>A logistic regression on surface features tells injected steps from the seeds' own steps at the same positions (cross-validated ROC AUC; 0.5 = indistinguishable).</p>
  <ul id="realism">{realism_lines}</ul>
  <h2>Replay fidelity audit</h2>
  {_audit_table(s.get("audit"))}
  {f"<h2>Notes</h2><ul>{problems}</ul>" if problems else ""}
</section>"""


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d2b3a;color:#fff;padding:10px 18px;display:flex;gap:20px;align-items:center}
header h1{font-size:18px;margin:0}
nav button{background:none;border:1px solid #6c7f93;color:#fff;padding:4px 12px;border-radius:4px;cursor:pointer}
nav button.on{background:#3b6ea8;border-color:#3b6ea8}
main{padding:14px 18px}
.meta,.muted{color:#5c6670}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.tile{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:8px 14px;min-width:110px}
.tile .num{font-size:22px;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chart{background:#fff;border:1px solid #dde1e6;border-radius:6px;margin:0;padding:8px}
figure.chart figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:12px;fill:#1d232b}
table.grid{border-collapse:collapse;background:#fff}
table.grid td,table.grid th{border:1px solid #dde1e6;padding:3px 8px;text-align:left;vertical-align:top}
#filters{display:flex;gap:10px;flex-wrap:wrap;margin-bottom:8px;align-items:center}
#record-list{max-height:320px;overflow:auto;border:1px solid #dde1e6;background:#fff}
#record-list table{width:100%;border-collapse:collapse}
#record-list td,#record-list th{padding:3px 8px;border-bottom:1px solid #eef0f3;text-align:left;white-space:nowrap}
#record-list tr.row{cursor:pointer}
#record-list tr.row:hover,#record-list tr.sel{background:#e6eef8}
.st-gold{color:#1f7a3a;font-weight:600}.st-rejected{color:#a8553b}.st-failed{color:#777}
#record-view{margin-top:12px;background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:10px 14px}
.cols{display:grid;grid-template-columns:60px 1fr 1fr;gap:0}
.cols>div{padding:4px 8px;border-bottom:1px solid #eef0f3;overflow-wrap:anywhere;white-space:pre-wrap;font-family:ui-monospace,Menlo,monospace;font-size:12px}
.cols .hd{font-family:inherit;font-weight:600;background:#f0f2f5;white-space:normal}
.decisive{background:#fff3cd}
.decisive.inj{background:#fde2dc}
.pass{color:#1f7a3a}.fail{color:#b02a1a;font-weight:600}
.prefix summary{cursor:pointer;font-weight:600}
.badge{display:inline-block;border-radius:3px;padding:0 6px;background:#e8ecf1;margin-right:4px}
.ok{background:#d8f0de}.bad{background:#f8d7d2}
code{background:#eef0f3;padding:0 3px;border-radius:3px}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
"""

_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('failforge-data').textContent);
const $ = (s, el=document) => el.querySelector(s);
const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
function show(tab){ for (const id of ['overview','records']) { $('#'+id).hidden = id !== tab; $('#tab-'+id).classList.toggle('on', id===tab); } }
function stepHtml(s){
  if (!s) return '<span class="muted">(run ended)</span>';
  let out = '';
  if (s.k === 'tool') out += '<b>tool '+esc(s.tool)+(s.err?' (error)':'')+'</b> → ';
  if (s.c) out += esc(s.c) + (s.x ? ' <span class="muted">… ('+s.x+' more characters)</span>' : '');
  for (const [n,a] of (s.calls||[])) out += (out?'\n':'') + '<b>calls</b> ' + esc(n) + '(' + esc(a) + ')';
  return out || '<span class="muted">(empty)</span>';
}
function options(sel, values){ for (const v of [...new Set(values)].sort()) { const o=document.createElement('option'); o.value=v; o.textContent=v; sel.appendChild(o);} }
function filtered(){
  const f = {mode: $('#f-mode').value, agent: $('#f-agent').value, env: $('#f-env').value, status: $('#f-status').value};
  return DATA.records.filter(r => (!f.mode||r.mode===f.mode) && (!f.agent||r.agent===f.agent) && (!f.env||r.env===f.env) && (!f.status||r.status===f.status));
}
function renderList(){
  const rows = filtered();
  $('#count').textContent = rows.length + ' of ' + DATA.records.length + ' records';
  $('#record-list tbody').innerHTML = rows.map(r =>
    '<tr class="row" data-id="'+esc(r.id)+'"><td class="st-'+r.status+'">'+r.status+'</td><td>'+esc(r.mode)+'</td><td>'+esc(r.seed)+'</td><td>'+r.t+'</td><td>'+esc(r.env)+'</td><td>'+esc(r.agent)+'</td><td>'+esc(r.guide)+'</td><td>'+esc(r.id)+'</td><td>'+esc((r.reasons[0]||'').slice(0,90))+'</td></tr>').join('');
}
function renderRecord(id){
  const r = DATA.records.find(x => x.id === id);
  if (!r) return;
  for (const tr of document.querySelectorAll('#record-list tr.row')) tr.classList.toggle('sel', tr.dataset.id === id);
  const seed = r.seed_key ? DATA.seeds[r.seed_key] : null;
  let h = '<h2 id="rv-title">'+esc(r.id)+' <span class="badge st-'+r.status+'">'+r.status+'</span><span class="badge" id="rv-mode">'+esc(r.mode)+'</span><span class="badge">'+esc(r.family)+'</span></h2>';
  h += '<p>seed <code>'+esc(r.seed)+'</code> · decisive step <b id="rv-step">'+r.t+'</b> · agent '+esc(r.agent)+' · environment '+esc(r.env)+' · note by the '+esc(r.guide)+' guide · attempt <code>'+esc(r.attempt)+'</code></p>';
  h += '<p><b>Task:</b> '+esc(r.task)+'</p>';
  if (r.prefix) {
    const mark = r.prefix.same ? '<span class="badge ok" id="rv-identical">identical</span>' : '<span class="badge bad" id="rv-identical">DIFFERS from the seed</span>';
    h += '<details class="prefix" id="rv-prefix"><summary>steps 0–'+(r.t-1)+': shared prefix '+mark+' sha256 <code id="rv-hash">'+esc(r.prefix.branch_hash.slice(0,16))+'</code>'+(r.prefix.same?'':' (seed <code>'+esc(r.prefix.seed_hash.slice(0,16))+'</code>)')+'</summary><div class="cols">';
    for (const s of (seed||[]).slice(0, r.t)) h += '<div>'+s.i+'</div><div>'+stepHtml(s)+'</div><div class="muted">same</div>';
    h += '</div></details>';
  }
  h += '<div class="cols" id="rv-steps"><div class="hd">step</div><div class="hd">seed (successful run)</div><div class="hd">branch (injected at step '+r.t+')</div>';
  const seedAfter = (seed||[]).filter(s => s.i >= r.t);
  const branch = r.branch || [];
  const n = Math.max(seedAfter.length, branch.length, 1);
  for (let k = 0; k < n; k++) {
    const a = k === 0 ? (r.original || seedAfter[0]) : seedAfter[k];
    const b = branch[k];
    const i = (b||a||{}).i ?? (r.t + k);
    const cls = k === 0 ? ' decisive' : '';
    h += '<div class="'+cls.trim()+'">'+i+(k===0?' ★':'')+'</div><div class="'+cls.trim()+'" '+(k===0?'id="rv-original"':'')+'>'+stepHtml(a)+'</div><div class="'+(k===0?'decisive inj':'')+'" '+(k===0?'id="rv-injected"':'')+'>'+(r.branch?stepHtml(b):'<span class="muted">no branch was run ('+esc(r.stage)+')</span>')+'</div>';
  }
  h += '</div>';
  if (r.screenshot) h += '<h3>Screen at the decisive step</h3><p class="muted">green ring: the seed\'s click; red cross: the injected click</p><img id="rv-screenshot" src="'+r.screenshot+'" alt="screenshot at step '+r.t+'">';
  h += '<h3>Steering note</h3><p id="rv-note">'+(r.note ? esc(r.note) : '<span class="muted">none</span>')+'</p>';
  if (r.conf) h += '<h3>Mode conformance</h3><p id="rv-conformance"><span class="badge '+(r.conf.exhibited===true?'ok':r.conf.exhibited===false?'bad':'')+'">'+(r.conf.exhibited===true?'exhibited':r.conf.exhibited===false?'not exhibited':'unverified')+'</span> ('+esc(r.conf.method)+') '+esc(r.conf.reason)+(r.conf.judge?'<br>judge <code>'+esc(r.conf.judge.model)+'</code>: '+esc(r.conf.judge.rationale):'')+'</p>';
  h += '<h3>Filter verdicts</h3><table class="grid" id="rv-verdicts"><tr><th>filter</th><th>verdict</th><th>reason</th></tr>';
  for (const v of r.verdicts) h += '<tr><td>'+esc(v.name)+'</td><td class="'+(v.passed?'pass':'fail')+'">'+(v.passed?'passed':'rejected')+'</td><td>'+esc(v.reason)+'</td></tr>';
  if (!r.verdicts.length) h += '<tr><td colspan="3" class="muted">no filter ran ('+esc(r.stage)+': '+esc(r.reasons.join('; '))+')</td></tr>';
  h += '</table>';
  h += '<h3>Evaluator</h3><pre id="rv-evaluator">'+esc(r.evaluator ? JSON.stringify(r.evaluator, null, 1) : (r.error ? JSON.stringify(r.error, null, 1) : 'no evaluation'))+'</pre>';
  if (r.decisiveness) h += '<h3>Decisiveness</h3><pre>'+esc(JSON.stringify(r.decisiveness))+'</pre>';
  $('#record-view').innerHTML = h;
  $('#record-view').hidden = false;
  if (location.hash !== '#record=' + encodeURIComponent(id)) history.replaceState(null, '', '#record=' + encodeURIComponent(id));
}
for (const [sel, key] of [['#f-mode','mode'],['#f-agent','agent'],['#f-env','env'],['#f-status','status']]) { options($(sel), DATA.records.map(r => r[key])); $(sel).addEventListener('change', renderList); }
$('#record-list tbody').addEventListener('click', e => { const tr = e.target.closest('tr.row'); if (tr) renderRecord(tr.dataset.id); });
$('#tab-overview').addEventListener('click', () => show('overview'));
$('#tab-records').addEventListener('click', () => show('records'));
function fromHash(){ if (location.hash.startsWith('#record=')) { show('records'); renderRecord(decodeURIComponent(location.hash.slice(8))); return true; } return false; }
window.addEventListener('hashchange', fromHash);
renderList();
if (!fromHash()) show('overview');
document.body.dataset.ready = '1';
"""


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no "</" can close it early."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


def render_report(ds: Dataset, summary: dict[str, Any] | None = None) -> str:
    s = summary if summary is not None else summarise(ds)
    seeds: dict[str, list[dict[str, Any]]] = {}
    order = {"gold": 0, "rejected": 1, "failed": 2}
    records = [_record_json(ds, r, seeds) for r in sorted(ds.records, key=lambda r: (order[r.status], r.attempt_id))]
    data = {"records": records, "seeds": seeds}
    title = f"failforge report — {ds.out.name}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{html.escape(title)}</title><style>{_STYLE}</style></head>
<body>
<header><h1>{html.escape(title)}</h1><nav><button id="tab-overview" class="on">Overview</button> <button id="tab-records">Records</button></nav></header>
<main>
{_overview(ds, s)}
<section id="records" hidden>
  <div id="filters">
    <label>mode <select id="f-mode"><option value="">all</option></select></label>
    <label>agent <select id="f-agent"><option value="">all</option></select></label>
    <label>environment <select id="f-env"><option value="">all</option></select></label>
    <label>outcome <select id="f-status"><option value="">all</option></select></label>
    <span id="count" class="muted"></span>
  </div>
  <div id="record-list"><table><thead><tr><th>outcome</th><th>mode</th><th>seed</th><th>t</th><th>environment</th><th>agent</th><th>guide</th><th>record</th><th>first reason</th></tr></thead><tbody></tbody></table></div>
  <div id="record-view" hidden></div>
</section>
</main>
<script type="application/json" id="failforge-data">{_script_json(data)}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def write_report(ds: Dataset, target: str | Path, summary: dict[str, Any] | None = None) -> Path:
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(ds, summary), encoding="utf-8")
    return path
