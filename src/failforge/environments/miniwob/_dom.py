"""The page as the agent sees it and as replay checks it: bids, observation text, DOM fingerprint.

One JavaScript pass over ``document.body`` does three things, so an observation and its fingerprint
always describe the same instant:

* **bid stamping** (as BrowserGym does): every element gets a ``bid`` attribute from a per-page counter,
  in document order, the first time it is seen; it keeps it afterwards, so a bid names the same element
  across steps. The number lives in a JS property too, so an element cloned with its attribute gets a
  fresh bid instead of a duplicate.
* **observation text**: one line per visible element worth showing (text, interactive tag, id, role,
  class), indented by nesting, with form state (value, checked, selected, focused). This is what the
  model reads and what replay compares byte for byte.
* **fingerprint lines**: every element, hidden or not, with tag, id, sorted attributes, sorted class
  tokens, own text, form state, visibility and scroll offset, minus the declared :data:`EXCLUDE` list
  (scripts, styles, MiniWoB's reward/timer HUD, attributes that record clicks or layout). The digest is
  the SHA-256 of these lines plus URL, focus, window scroll and MiniWoB's done/raw-reward globals.

The fingerprint's ``parts`` map a readable node key (child-index path + tag#id) to that node's
normalised line, so a drift error lists exactly the nodes that changed, old and new. Pages bigger than
:data:`MAX_NODE_PARTS` nodes fall back to one hashed part per region to keep seeds small.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from failforge.canonical import canonical_json, sha256_hex
from failforge.environments._base import Fingerprint

#: Bump whenever the normalisation below changes: fingerprints from different versions never compare.
NORMALISER_VERSION = "miniwob-dom/1"

#: What the fingerprint (and the observation) leave out, and why.
EXCLUDE: dict[str, tuple[str, ...]] = {
    # Not page structure: code, styling, metadata.
    "tags": ("script", "style", "link", "meta", "noscript", "template", "title", "head", "base"),
    # MiniWoB's harness chrome: the reward/timer HUD ticks with the clock, the canvases are click
    # visualisations, the sync cover is MiniWoB's "START" screen (episode status is fingerprinted
    # from WOB_DONE_GLOBAL instead).
    "ids": ("reward-display", "click-canvas", "attention-canvas", "sync-task-cover"),
    # Layout/timing-dependent or click bookkeeping: inline styles (visibility is captured from the
    # computed style instead), MiniWoB's ref codes and "tampered" marks.
    "attributes": ("style", "data-wob_ref", "data-wob_eps", "data-tampered", "data-recording_target"),
    # Pointer-position dependent class tokens (hover styling).
    "class_tokens": ("ui-state-hover", "hover"),
}

#: Class tokens shown in observation text only when they carry meaning (widget noise is dropped).
_OBS_CLASS_NOISE_PREFIXES = ("ui-corner-", "ui-helper-", "ui-widget", "ui-state-default", "ui-front")
_OBS_TEXT_LIMIT = 200
_PART_VALUE_LIMIT = 200
MAX_NODE_PARTS = 600

# The page script's lines are its own (JavaScript): the noqa after the string covers them.
_SNAPSHOT_JS = r"""
(opts) => {
  const EXCL_TAGS = new Set(opts.excludeTags);
  const EXCL_IDS = new Set(opts.excludeIds);
  const EXCL_ATTRS = new Set(opts.excludeAttrs);
  const EXCL_CLASSES = new Set(opts.excludeClasses);
  const NOISE = opts.noisePrefixes;
  const TEXT_LIMIT = opts.textLimit;
  const INTERACTIVE = new Set(['a','button','input','select','option','textarea','label','summary','details',
                               'h1','h2','h3','h4','h5','h6','li','td','th','img','svg','canvas','circle','rect',
                               'polygon','ellipse','path','line','text']);
  const OBS_ATTRS = ['type','name','placeholder','title','role','href','alt','for','aria-label','aria-expanded',
                     'aria-selected','aria-checked','data-type','data-index','min','max','step'];
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const q = (s) => JSON.stringify(s);
  if (window.__ffNextBid === undefined) {
    Object.defineProperty(window, '__ffNextBid', {value: 1, writable: true, enumerable: false});
  }
  const active = document.activeElement;
  const obs = [];
  const nodes = [];
  let focusBid = null;

  function ownText(el) {
    let t = '';
    for (const c of el.childNodes) { if (c.nodeType === 3) t += ' ' + c.data; }
    return clean(t);
  }
  function isVisible(el) {
    // A closed <select> does not render its options, but they are what the agent chooses from.
    if ((el.tagName === 'OPTION' || el.tagName === 'OPTGROUP') && el.closest('select')) return isVisible(el.closest('select'));
    if (typeof el.checkVisibility === 'function') {
      return el.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true});
    }
    return !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  }
  function formState(el, tag) {
    const st = [];
    if (tag === 'input') {
      const type = (el.type || 'text').toLowerCase();
      if (type === 'checkbox' || type === 'radio') st.push(el.checked ? 'checked' : 'unchecked');
      else if (type !== 'button' && type !== 'submit' && type !== 'reset' && type !== 'image') st.push('value=' + q(el.value));
    } else if (tag === 'textarea') {
      st.push('value=' + q(el.value));
    } else if (tag === 'select') {
      const o = el.options[el.selectedIndex];
      st.push('value=' + q(o ? clean(o.textContent) : ''));
    } else if (tag === 'option') {
      if (el.selected) st.push('selected');
    }
    if (el.disabled) st.push('disabled');
    if (el.readOnly) st.push('readonly');
    return st;
  }
  function stamp(el) {
    if (el.__ffBid === undefined || el.getAttribute('bid') !== String(el.__ffBid)) {
      el.__ffBid = window.__ffNextBid++;
      el.setAttribute('bid', String(el.__ffBid));
    }
    return String(el.__ffBid);
  }
  function visit(el, path, obsDepth) {
    const tag = el.tagName.toLowerCase();
    if (EXCL_TAGS.has(tag) || (el.id && EXCL_IDS.has(el.id))) return;
    const bid = stamp(el);
    if (el === active) focusBid = bid;
    const visible = isVisible(el);
    const text = ownText(el);
    const classAttr = el.getAttribute('class') || '';
    const classes = classAttr.split(/\s+/).filter((c) => c && !EXCL_CLASSES.has(c));
    const state = formState(el, tag);
    // fingerprint line: everything that is not excluded
    const attrs = [];
    for (const a of Array.from(el.attributes)) {
      const n = a.name.toLowerCase();
      if (n === 'id' || n === 'class' || n === 'bid' || EXCL_ATTRS.has(n)) continue;
      attrs.push(n + '=' + q(a.value));
    }
    attrs.sort();
    let fp = tag + (el.id ? '#' + el.id : '') + ' bid=' + bid;
    if (!visible) fp += ' hidden';
    if (classes.length) fp += ' class=' + q(classes.slice().sort().join(' '));
    if (attrs.length) fp += ' ' + attrs.join(' ');
    if (text) fp += ' text=' + q(text);
    if (state.length) fp += ' ' + state.join(' ');
    if (el.scrollTop || el.scrollLeft) fp += ' scroll=' + Math.round(el.scrollLeft) + ',' + Math.round(el.scrollTop);
    if (el === active) fp += ' focused';
    nodes.push([path, tag + (el.id ? '#' + el.id : ''), fp]);
    // observation line: visible elements worth showing
    let childDepth = obsDepth;
    if (visible) {
      const shown = classes.filter((c) => !NOISE.some((p) => c.startsWith(p))).slice(0, 3);
      const obsAttrs = [];
      for (const n of OBS_ATTRS) {
        if (el.hasAttribute(n)) obsAttrs.push(n + '=' + q(el.getAttribute(n)));
      }
      const worth = text || INTERACTIVE.has(tag) || el.id || shown.length || obsAttrs.length || state.length;
      if (worth) {
        let line = '  '.repeat(obsDepth) + '[' + bid + '] ' + tag + (el.id ? '#' + el.id : '');
        if (shown.length) line += '.' + shown.join('.');
        if (text) line += ' ' + q(text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) + '...' : text);
        if (obsAttrs.length) line += ' ' + obsAttrs.join(' ');
        if (state.length) line += ' ' + state.join(' ');
        if (el === active) line += ' focused';
        obs.push(line);
        childDepth = obsDepth + 1;
      }
    }
    let i = 0;
    for (const child of el.children) {
      visit(child, path + '.' + String(i).padStart(3, '0'), childDepth);
      i++;
    }
  }
  let i = 0;
  for (const child of document.body ? document.body.children : []) {
    visit(child, String(i).padStart(3, '0'), 0);
    i++;
  }
  const wob = (typeof WOB_DONE_GLOBAL !== 'undefined')
    ? {done: !!WOB_DONE_GLOBAL, reward: Number(WOB_REWARD_GLOBAL), raw_reward: Number(WOB_RAW_REWARD_GLOBAL),
       reason: (typeof WOB_REWARD_REASON === 'undefined' || WOB_REWARD_REASON === null) ? null : String(WOB_REWARD_REASON)}
    : null;
  let utterance = null;
  const query = document.getElementById('query');
  if (query) utterance = clean(query.textContent);
  return {url: location.href, title: document.title || '', focus: focusBid,
          scroll: [Math.round(window.scrollX), Math.round(window.scrollY)],
          obs: obs, nodes: nodes, wob: wob, utterance: utterance};
}
"""  # noqa: E501

_SNAPSHOT_OPTS: dict[str, Any] = {
    "excludeTags": list(EXCLUDE["tags"]),
    "excludeIds": list(EXCLUDE["ids"]),
    "excludeAttrs": list(EXCLUDE["attributes"]),
    "excludeClasses": list(EXCLUDE["class_tokens"]),
    "noisePrefixes": list(_OBS_CLASS_NOISE_PREFIXES),
    "textLimit": _OBS_TEXT_LIMIT,
}


@dataclass(frozen=True)
class EpisodeStatus:
    """MiniWoB's own verdict, read from its JS globals (WOB_DONE_GLOBAL, WOB_REWARD_GLOBAL, ...)."""

    done: bool
    reward: float
    raw_reward: float
    reason: str | None

    def summary(self) -> str:
        return (
            f"done={str(self.done).lower()} raw_reward={self.raw_reward:g} reward={self.reward:g}"
            f" reason={self.reason or '-'}"
        )


@dataclass(frozen=True)
class DomSnapshot:
    """One normalised reading of the page: observation lines, fingerprint lines and episode status."""

    url: str
    title: str
    focus: str | None
    scroll: tuple[int, int]
    obs_lines: tuple[str, ...]
    nodes: tuple[tuple[str, str, str], ...]  # (path, tag#id, fingerprint line)
    status: EpisodeStatus | None
    utterance: str | None

    def observation_text(self) -> str:
        """What the model reads: URL, focus, scroll and one indented line per visible element."""
        head = [f"url: {self.url}"]
        if self.scroll != (0, 0):
            head.append(f"scroll: {self.scroll[0]},{self.scroll[1]}")
        body = list(self.obs_lines) or ["(the page shows no elements)"]
        return "\n".join(head + body)

    def fingerprint(self) -> Fingerprint:
        """Digest over every normalised node plus URL, focus, scroll and episode status; one part per node."""
        status = self.status.summary() if self.status else "no-miniwob-core"
        meta = {
            "~normaliser": NORMALISER_VERSION,
            "~url": self.url,
            "~focus": self.focus or "-",
            "~scroll": f"{self.scroll[0]},{self.scroll[1]}",
            "~episode": status,
            "~query": self.utterance if self.utterance is not None else "-",
        }
        digest = sha256_hex(canonical_json({"meta": meta, "nodes": [[p, line] for p, _, line in self.nodes]}))
        parts = dict(meta)
        if len(self.nodes) <= MAX_NODE_PARTS:
            for path, label, line in self.nodes:
                parts[f"{path} {label}"] = _short(line)
        else:
            regions: dict[str, list[str]] = {}
            labels: dict[str, str] = {}
            for path, label, line in self.nodes:
                region = ".".join(path.split(".")[:3])
                regions.setdefault(region, []).append(line)
                labels.setdefault(region, label)
            for region, lines in regions.items():
                parts[f"{region} {labels[region]} (+{len(lines) - 1} nodes)"] = (
                    f"sha256:{sha256_hex(chr(10).join(lines))[:16]} {_short(lines[0], 120)}"
                )
        return Fingerprint(digest=digest, parts=parts)


def _short(line: str, limit: int = _PART_VALUE_LIMIT) -> str:
    """A part value stays readable in a drift message; a long line keeps a hash of its full text."""
    if len(line) <= limit:
        return line
    return f"{line[: limit - 30]}... sha256:{sha256_hex(line)[:16]}"


def snapshot(page: Any) -> DomSnapshot:
    """Stamp bids and read the page once (one ``page.evaluate`` round trip)."""
    raw = page.evaluate(_SNAPSHOT_JS, _SNAPSHOT_OPTS)
    wob = raw.get("wob")
    status = None
    if wob is not None:
        status = EpisodeStatus(
            done=bool(wob["done"]),
            reward=float(wob["reward"]),
            raw_reward=float(wob["raw_reward"]),
            reason=wob["reason"],
        )
    return DomSnapshot(
        url=str(raw["url"]),
        title=str(raw["title"]),
        focus=raw.get("focus"),
        scroll=(int(raw["scroll"][0]), int(raw["scroll"][1])),
        obs_lines=tuple(raw["obs"]),
        nodes=tuple((str(p), str(label), str(line)) for p, label, line in raw["nodes"]),
        status=status,
        utterance=raw.get("utterance"),
    )


def dom_fingerprint(page: Any) -> Fingerprint:
    """The DOM fingerprint of ``page`` right now (stamps bids of elements not seen before)."""
    return snapshot(page).fingerprint()


def read_status(page: Any) -> EpisodeStatus | None:
    """MiniWoB's episode globals without a full snapshot (used by the evaluator)."""
    wob = page.evaluate(
        "() => (typeof WOB_DONE_GLOBAL === 'undefined') ? null : {done: !!WOB_DONE_GLOBAL, reward:"
        " Number(WOB_REWARD_GLOBAL), raw_reward: Number(WOB_RAW_REWARD_GLOBAL), reason: (typeof WOB_REWARD_REASON ==="
        " 'undefined' || WOB_REWARD_REASON === null) ? null : String(WOB_REWARD_REASON)}"
    )
    if wob is None:
        return None
    return EpisodeStatus(
        done=bool(wob["done"]), reward=float(wob["reward"]), raw_reward=float(wob["raw_reward"]), reason=wob["reason"]
    )


# --------------------------------------------------------------------------- parsing (for oracles)


@dataclass(frozen=True)
class ObservedNode:
    """One observation line parsed back: what a scripted policy (or a test) can reason about."""

    bid: str
    tag: str
    id: str | None
    classes: tuple[str, ...]
    text: str
    attrs: dict[str, str]
    flags: frozenset[str]
    depth: int

    def has_class(self, name: str) -> bool:
        return name in self.classes


def parse_observation(text: str) -> list[ObservedNode]:
    """Parse the lines :meth:`DomSnapshot.observation_text` wrote (header lines are skipped)."""
    decoder = json.JSONDecoder()
    out: list[ObservedNode] = []
    for raw in text.splitlines():
        stripped = raw.lstrip(" ")
        if not stripped.startswith("[") or "] " not in stripped:
            continue
        depth = (len(raw) - len(stripped)) // 2
        bid, _, rest = stripped[1:].partition("] ")
        if not bid.isdigit():
            continue
        head, _, rest = rest.partition(" ")
        tagpart, *classes = head.split(".")
        tag, _, ident = tagpart.partition("#")
        text_value = ""
        attrs: dict[str, str] = {}
        flags: set[str] = set()
        rest = rest.strip()
        if rest.startswith('"'):
            text_value, end = decoder.raw_decode(rest)
            rest = rest[end:].strip()
        while rest:
            token, sep, tail = rest.partition("=")
            if sep and " " not in token and tail.startswith('"'):
                value, end = decoder.raw_decode(tail)
                attrs[token] = str(value)
                rest = tail[end:].strip()
            else:
                word, _, rest = rest.partition(" ")
                flags.add(word)
                rest = rest.strip()
        out.append(
            ObservedNode(
                bid=bid,
                tag=tag,
                id=ident or None,
                classes=tuple(classes),
                text=str(text_value),
                attrs=attrs,
                flags=frozenset(flags),
                depth=depth,
            )
        )
    return out
