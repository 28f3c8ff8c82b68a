// The visitor-facing pages: the queue page and the error pages. Plain HTML and inline CSS that
// work without JavaScript; a small script polls the JSON status where JavaScript runs.

import type { VisitorStatus } from '../core/visit.js'

/** The room's own words on its queue page. */
export interface RoomText {
  title: string
  message: string
}

/**
 * Text for HTML. Beyond the five markup characters, every printable character outside ASCII becomes
 * a character reference too, so that a page stays a one-byte string: a two-byte page had to be
 * re-encoded per request, 15–20 µs a page in the edge. (C1 controls stay as they are: their
 * references would read as Windows-1252.)
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']|[\u00a0-\u{10ffff}]/gu, (c) => `&#${c.codePointAt(0)};`)
}

/** A count with thousands separators, as toLocaleString('en') writes it ("1,234"), without its cost per call. */
export function grouped(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) return n.toLocaleString('en')
  const digits = String(n)
  if (n < 1000) return digits
  let out = digits.slice(0, digits.length % 3 || 3)
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`
  return out
}

/** A room's title and message, escaped once (a room has one of each; the edge few rooms). */
const escapedTexts = new Map<string, string>()
function escapeRoomText(text: string): string {
  let out = escapedTexts.get(text)
  if (out === undefined) {
    if (escapedTexts.size >= 256) escapedTexts.clear()
    escapedTexts.set(text, (out = escapeHtml(text)))
  }
  return out
}

export function formatEta(seconds: number | null): string {
  if (seconds === null) return 'unknown for now'
  if (seconds < 60) return 'under a minute'
  const minutes = Math.round(seconds / 60)
  if (minutes < 60) return `about ${minutes} minute${minutes === 1 ? '' : 's'}`
  const hours = Math.floor(minutes / 60)
  const rest = minutes % 60
  return `about ${hours} h ${rest} min`
}

/** A duration in whole minutes, for the ends of the range. */
function minutesText(minutes: number): string {
  if (minutes < 60) return `${minutes} min`
  return minutes % 60 === 0 ? `${minutes / 60} h` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}

/** The range around the estimate, and that it is one, as HTML: "Between 4 and 7 minutes &mdash; an estimate". */
export function formatEtaRange(range: [number, number] | null): string {
  if (range === null) return ''
  const low = Math.round(range[0] / 60)
  const high = Math.round(range[1] / 60)
  if (high < 1) return 'Under a minute &mdash; an estimate'
  if (low === high) return 'An estimate: it follows how fast the line moves'
  if (low < 1) return `Up to ${high < 60 ? `${high} minute${high === 1 ? '' : 's'}` : minutesText(high)} &mdash; an estimate`
  if (high < 60) return `Between ${low} and ${high} minutes &mdash; an estimate`
  return `Between ${minutesText(low)} and ${minutesText(high)} &mdash; an estimate`
}

export const STYLE = `
:root{color-scheme:light dark;--bg:#f6f7fb;--card:#fff;--ink:#1c2030;--muted:#5b6275;--accent:#3056d3;--track:#e3e7f2;--line:#eceef5}
@media (prefers-color-scheme:dark){:root{--bg:#11131a;--card:#1b1e28;--ink:#eef0f6;--muted:#a5abbd;--accent:#7d9bff;--track:#2c3142;--line:#272b38}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink);overflow-wrap:break-word;-webkit-text-size-adjust:100%;text-size-adjust:100%}
main{max-width:34rem;margin:0 auto;padding:2rem 1rem}
.card{background:var(--card);border-radius:1rem;padding:1.5rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .5rem}p{margin:.5rem 0}.muted{color:var(--muted);font-size:.9rem}
[role=status]>.muted:first-child{margin-top:1.25rem}
.big{font-size:2.5rem;line-height:1.15;font-weight:700;margin:0 0 .75rem;font-variant-numeric:tabular-nums}
dl{margin:1rem 0}dl>div{display:flex;flex-wrap:wrap;justify-content:space-between;gap:0 1rem;padding:.375rem 0}dl>div+div{border-top:1px solid var(--line)}
dt{color:var(--muted)}dd{margin:0 0 0 auto;font-weight:600;text-align:right;font-variant-numeric:tabular-nums}
progress{display:block;width:100%;height:.75rem;appearance:none;border:0;border-radius:1rem;background:var(--track);overflow:hidden}
progress::-webkit-progress-bar{background:var(--track)}progress::-webkit-progress-value{background:var(--accent)}progress::-moz-progress-bar{background:var(--accent)}
@media (max-width:400px){main{padding:1rem .75rem}.card{padding:1.25rem}.big{font-size:2.25rem}}
`

/** The status poller, served as /_anteroom/queue.js. */
export const POLL_SCRIPT = `(function(){var el=document.getElementById('anteroom');if(!el)return;
var t0=Date.now(),cds=document.querySelectorAll('[data-in]');function two(n){return (n<10?'0':'')+n}
function cd(){for(var i=0;i<cds.length;i++){var c=cds[i],s=Math.max(0,Math.ceil(Number(c.getAttribute('data-in'))-(Date.now()-t0)/1000));
c.textContent=(s>=86400?Math.floor(s/86400)+' d ':'')+two(Math.floor(s%86400/3600))+':'+two(Math.floor(s%3600/60))+':'+two(s%60)}}
if(cds.length){cd();setInterval(cd,1000)}
var me=document.currentScript,ver=me&&/[?&]v=([0-9a-z]+)/.exec(me.src);document.cookie='anteroom_js='+(ver?ver[1]:'0')+'; Path=/; SameSite=Lax; Max-Age=86400';
var room=el.getAttribute('data-room'),every=Number(el.getAttribute('data-refresh'))*1000,next=Number(el.getAttribute('data-next'))*1000||every;
function set(id,v){var n=document.getElementById(id);if(n)n.textContent=v}
function eta(s){if(s===null)return 'unknown for now';if(s<60)return 'under a minute';var m=Math.round(s/60);if(m<60)return 'about '+m+' minute'+(m===1?'':'s');return 'about '+Math.floor(m/60)+' h '+(m%60)+' min'}
function mins(m){return m<60?m+' min':m%60===0?m/60+' h':Math.floor(m/60)+' h '+(m%60)+' min'}
function range(r){if(!r)return '';var l=Math.round(r[0]/60),h=Math.round(r[1]/60),e=' \\u2014 an estimate';if(h<1)return 'Under a minute'+e;if(l===h)return 'An estimate: it follows how fast the line moves';
if(l<1)return 'Up to '+(h<60?h+' minute'+(h===1?'':'s'):mins(h))+e;if(h<60)return 'Between '+l+' and '+h+' minutes'+e;return 'Between '+mins(l)+' and '+mins(h)+e}
function tick(){fetch('/_anteroom/status?room='+encodeURIComponent(room),{headers:{accept:'application/json'},credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json()}).then(function(s){
if(s.state==='admitted'){location.reload();return}
if(s.state!==el.getAttribute('data-state')){location.reload();return}
if(typeof s.position==='number'){set('position',s.position.toLocaleString());set('ahead',s.ahead.toLocaleString());set('waiting',s.waiting.toLocaleString());
var p=document.getElementById('progress');if(p&&s.waiting>0){p.value=Math.max(0,s.waiting-s.ahead);p.max=s.waiting}}
set('eta',eta(s.etaSeconds));var n=document.getElementById('eta-range');if(n){n.textContent=range(s.etaRange);n.hidden=!s.etaRange}
next=typeof s.nextPollSeconds==='number'&&s.nextPollSeconds>0?s.nextPollSeconds*1000:every}).catch(function(){next=every}).then(function(){setTimeout(tick,next)})}
setTimeout(tick,next)})()`

/** When a page without the script reloads (the Refresh header, the noscript meta): the next poll, in whole seconds. */
export function refreshAfter(v: VisitorStatus): number {
  return Math.max(1, Math.round(v.nextPollSeconds))
}

/** A page that will not change by itself: nothing to refresh or poll. */
const finalState = (v: VisitorStatus) => v.state === 'closed' || v.state === 'ended'

/**
 * The queue page's style sheet and script, served by the edge as files of their own
 * (/_anteroom/queue.css and /_anteroom/queue.js, src/http/app.ts) that browsers keep: a page that
 * refreshes every few seconds sends some 1,000 characters, not 5,000. Each URL carries a digest of
 * its file, so a new release is fetched at once.
 */
export const QUEUE_ASSETS = {
  css: { path: '/_anteroom/queue.css', type: 'text/css; charset=utf-8', body: STYLE, version: digest(STYLE) },
  js: { path: '/_anteroom/queue.js', type: 'text/javascript; charset=utf-8', body: POLL_SCRIPT, version: digest(POLL_SCRIPT) },
} as const

/** A short, stable digest of a text (FNV-1a, 32 bits, base 36): a file's version in its URL, not a secret. */
function digest(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(36)
}

const PAGE_HEAD = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="stylesheet" href="${QUEUE_ASSETS.css.path}?v=${QUEUE_ASSETS.css.version}">`
const PAGE_TAIL_POLLING = `<script src="${QUEUE_ASSETS.js.path}?v=${QUEUE_ASSETS.js.version}"></script></body></html>`
const PAGE_TAIL_FINAL = '</body></html>'

/**
 * The queue page. Its text is ASCII (escapeHtml), so a one-byte string. Everything but the visitor's
 * own numbers is its frame, the same for every visitor of a room in a state and so made once
 * (frameFor): a page is the frame's four pieces and three numbers.
 */
export function queuePage(v: VisitorStatus, text: RoomText): string {
  const f = frameFor(v, text)
  return `${f.head}${finalState(v) ? '' : refreshAfter(v)}${f.beforeNext}${v.nextPollSeconds}${f.beforeNumbers}${numbersBlock(v)}${f.tail}`
}

/**
 * A queue page without the visitor's own: its text before the noscript refresh's seconds, before
 * data-next's seconds, before the numbers block, and after it.
 */
interface PageFrame {
  head: string
  beforeNext: string
  beforeNumbers: string
  tail: string
  /** What else it was made from: a frame is used only for a page of the same. */
  room: string
  refreshSeconds: number
}

/** A room text's frames, by state; a state's frame without a place (sold out to a newcomer) apart. */
const frames = new WeakMap<RoomText, Map<string, { placed?: PageFrame; unplaced?: PageFrame }>>()

/**
 * The visitor's frame, made once per room text (the room's settings: new ones when they change),
 * state and whether the visitor has a place. A scheduled room's page has the visitor's ticket and the
 * schedule's times in it: its frame is made for the page.
 */
function frameFor(v: VisitorStatus, text: RoomText): PageFrame {
  if (v.schedule !== undefined || v.ticket !== undefined) return pageFrame(v, text)
  let byState = frames.get(text)
  if (byState === undefined) frames.set(text, (byState = new Map()))
  let kept = byState.get(v.state)
  if (kept === undefined) byState.set(v.state, (kept = {}))
  const placed = v.position !== null
  let f = placed ? kept.placed : kept.unplaced
  if (f === undefined || f.room !== v.room || f.refreshSeconds !== v.refreshSeconds) {
    f = pageFrame(v, text)
    if (placed) kept.placed = f
    else kept.unplaced = f
  }
  return f
}

/**
 * The same text as one flat string. V8 keeps a text made with + or a template as a tree of its pieces,
 * walked again whenever it is copied, and a frame is copied into every page. A JSON round trip makes
 * a new, flat string (join and slice may hand back the tree itself); the text is ASCII (escapeHtml).
 */
function flat(tree: string): string {
  return JSON.parse(JSON.stringify(tree)) as string
}

/** The page around the visitor's numbers. */
function pageFrame(v: VisitorStatus, text: RoomText): PageFrame {
  const headline =
    v.state === 'closed'
      ? 'This sale is closed'
      : v.state === 'ended'
        ? 'Your session was ended'
        : v.state === 'busy'
          ? 'We are busy right now'
          : v.state === 'paused'
            ? 'The line is paused'
            : v.state === 'recovering'
              ? 'We are restoring the line'
              : v.state === 'scheduled'
                ? 'This sale has not opened yet'
                : v.state === 'prequeue'
                  ? 'You are in the pre-queue'
                  : v.state === 'sold_out'
                    ? 'Sold out'
                    : v.state === 'all_held'
                      ? 'Every seat is held right now'
                      : escapeRoomText(text.title)
  const lead =
    v.state === 'closed'
      ? 'Nobody is being let in any more. Thank you for your patience.'
      : v.state === 'ended'
        ? 'The organisers ended your session, so you have no place in line. If you think this is a mistake, contact them.'
        : v.state === 'busy'
          ? 'We are busy; you keep your place. This page tries again by itself.'
          : v.state === 'paused'
            ? 'Nobody is being let in for the moment. You keep your place in line.'
            : v.state === 'recovering'
              ? 'Our waiting room had a hiccup. Everyone is being put back in the order they arrived, and nobody is let in until that is done (well under a minute). Keep this page open: you keep your place.'
              : v.state === 'scheduled' && v.schedule
                ? `The pre-queue opens at ${timeText(v.schedule.prequeueAt)} and the sale at ${timeText(v.schedule.opensAt)}. Everyone who comes during the pre-queue gets a place in a random order, drawn when the sale opens, so there is no need to be first.`
                : v.state === 'prequeue' && v.schedule
                  ? `When the sale opens at ${timeText(v.schedule.opensAt)}, everyone in the pre-queue gets a place in a random order, drawn then. Arriving earlier gains nothing, and neither does refreshing: keep this page open.`
                  : v.state === 'sold_out'
                    ? v.position === null
                      ? 'Everything has been sold, so nobody is being let in. This page checks by itself in case any come back.'
                      : 'Everything has been sold, so nobody is being let in. You keep your place in line in case any come back.'
                    : v.state === 'all_held'
                      ? 'Every seat is held right now; some may come back. People holding them have a few minutes to pay, and when a hold runs out or is released the line moves again. You keep your place.'
                      : escapeRoomText(text.message)
  const refreshes = finalState(v)
    ? ''
    : `<p class="muted">This page refreshes itself every ${v.refreshSeconds} seconds. Please keep it open; refreshing does not lose your place.</p>`
  const final = finalState(v)
  return {
    head: flat(`${PAGE_HEAD}<title>${headline}</title>${final ? '' : '<noscript><meta http-equiv="refresh" content="'}`),
    beforeNext: flat(`${final ? '' : '"></noscript>'}</head>
<body><main id="anteroom" data-room="${escapeRoomText(v.room)}" data-state="${v.state}" data-refresh="${v.refreshSeconds}" data-next="`),
    beforeNumbers: flat(`">
<div class="card" role="region" aria-labelledby="headline">
<h1 id="headline">${headline}</h1>
<p>${lead}</p>
<div role="status" aria-live="polite" aria-atomic="false">`),
    tail: flat(`</div>${drawBlock(v)}
${refreshes}
</div></main>${final ? PAGE_TAIL_FINAL : PAGE_TAIL_POLLING}`),
    room: v.room,
    refreshSeconds: v.refreshSeconds,
  }
}

/** The visitor's own numbers: their place, the line and the wait, or a scheduled room's countdown. */
function numbersBlock(v: VisitorStatus): string {
  if (v.state === 'scheduled' || v.state === 'prequeue') return scheduleBlock(v)
  if (v.position === null) return ''
  return `<p class="muted">Your place in line</p>
<p class="big" id="position">${grouped(v.position)}</p>
<progress id="progress" max="${v.waiting ?? 1}" value="${Math.max(0, (v.waiting ?? 0) - (v.ahead ?? 0))}" aria-label="Progress through the line"></progress>
<dl>
<div><dt>People ahead of you</dt><dd id="ahead">${grouped(v.ahead ?? 0)}</dd></div>
<div><dt>People in line</dt><dd id="waiting">${grouped(v.waiting ?? 0)}</dd></div>
<div><dt>Estimated wait</dt><dd id="eta">${formatEta(v.etaSeconds)}</dd></div>
</dl>
<p class="muted" id="eta-range"${v.etaRange === null ? ' hidden' : ''}>${formatEtaRange(v.etaRange)}</p>`
}

/** An ISO time as written in the schedule, with its zone: "10:00 on 2026-12-01 (UTC+01:00)". */
export function timeText(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.exec(iso)
  if (m === null) return escapeHtml(iso)
  return `${m[2]} on ${m[1]} (UTC${m[3] === 'Z' ? '' : m[3]})`
}

/** A scheduled room before its opening: the countdown, and how many are in the pre-queue. */
function scheduleBlock(v: VisitorStatus): string {
  const s = v.schedule
  if (s === undefined) return ''
  const pre = v.state === 'scheduled'
  const count = pre ? '' : `<dl><div><dt>People in the pre-queue</dt><dd id="waiting">${grouped(v.waiting ?? 0)}</dd></div></dl>`
  return `<p class="muted">${pre ? 'The pre-queue opens in' : 'The sale opens in'}</p>
<p class="big" id="countdown" data-in="${pre ? s.prequeueInSeconds : s.opensInSeconds}">${clockText(pre ? s.prequeueInSeconds : s.opensInSeconds)}</p>${count}`
}

function clockText(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, '0')
  const days = Math.floor(seconds / 86_400)
  return `${days > 0 ? `${days} d ` : ''}${two(Math.floor((seconds % 86_400) / 3600))}:${two(Math.floor((seconds % 3600) / 60))}:${two(seconds % 60)}`
}

/** A scheduled room: the visitor's ticket, and after the draw their value and rank, with how to check them. */
function drawBlock(v: VisitorStatus): string {
  if (v.ticket === undefined) return ''
  const ticket = `<p class="muted">Your ticket in the draw: <code id="ticket">${escapeHtml(v.ticket)}</code></p>`
  if (v.draw === undefined) return ticket
  return `${ticket}
<p class="muted" id="draw">You were drawn <strong>number ${grouped(v.draw.rank)}</strong> of the pre-queue; your draw value is <code>${escapeHtml(v.draw.value.slice(0, 16))}&hellip;</code>.
Anyone can check the draw: <a href="${escapeHtml(v.draw.check)}">the published seed and every value</a>; the value is HMAC-SHA256(seed, "${escapeHtml(v.room)}:your ticket").</p>`
}

export function errorPage(status: number, title: string, detail: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main><div class="card" role="alert"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p>
<p class="muted">Error ${status}</p></div></main></body></html>`
}
