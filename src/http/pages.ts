// The visitor-facing pages: the queue page and the error pages, in the visitor's language (i18n.ts,
// the catalogues in locales/). Plain HTML that works without JavaScript; a small script polls the JSON
// status where JavaScript runs. A room may bring its own page body (page-templates.ts): it goes in the
// same shell (pageShell), so the head, the policy and the script stay the edge's.

import { BoundedMap } from '../core/bounded-map.js'
import type { Problem } from '../core/errors.js'
import { type Locale, localeDir } from '../core/locales.js'
import { ROOM_SETTINGS } from '../core/settings.js'
import type { VisitorStatus } from '../core/visit.js'
import { ACCESS_STYLE, accessForm, laneNote } from './access-page.js'
import { escapeHtml, flat } from './html.js'
import { liveTexts, type Texts, texts, type Vars } from './i18n.js'
import { CATALOGUES, type MessageKey } from './locales/index.js'

export { escapeHtml, grouped } from './html.js'

/** The room's own words on its queue page. */
export interface RoomText {
  title: string
  message: string
}

/** A room's title and message, escaped once (a room has one of each; the edge few rooms). */
const escapedTexts = new BoundedMap<string, string>(256)
function escapeRoomText(text: string): string {
  let out = escapedTexts.get(text)
  if (out === undefined) {
    escapedTexts.set(text, (out = escapeHtml(text)))
  }
  return out
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
dt{color:var(--muted)}dd{margin:0;margin-inline-start:auto;font-weight:600;text-align:end;font-variant-numeric:tabular-nums}
progress{display:block;width:100%;height:.75rem;appearance:none;border:0;border-radius:1rem;background:var(--track);overflow:hidden}
progress::-webkit-progress-bar{background:var(--track)}progress::-webkit-progress-value{background:var(--accent)}progress::-moz-progress-bar{background:var(--accent)}
${ACCESS_STYLE}
@media (max-width:400px){main{padding:1rem .75rem}.card{padding:1.25rem}.big{font-size:2.25rem}}
`

/** A JSON text as JavaScript source in ASCII (\u escapes), for the script's English defaults. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * The status poller, served as /_anteroom/queue.js. It writes the wait and its range in the page's
 * language as texts.ts does: the words come from the page (data-i18n, absent in English: the script's
 * own defaults), the numbers and plurals from the browser's Intl for <html lang>.
 */
export const POLL_SCRIPT = `(function(){var el=document.getElementById('anteroom');if(!el)return;
var D=${asciiJson(liveTexts('en'))},L=D,a=el.getAttribute('data-i18n');if(a){try{L=JSON.parse(a)}catch(e){}}
var lang=document.documentElement.lang||'en',nf,pr;try{nf=new Intl.NumberFormat(lang,{maximumFractionDigits:0});pr=new Intl.PluralRules(lang)}catch(e){nf=new Intl.NumberFormat('en');pr=new Intl.PluralRules('en')}
function num(n){return nf.format(n)}
function say(k,v,n){var t=L[k]||D[k]||'';if(typeof t==='object')t=(n===undefined?t.other:t[pr.select(n)]||t.other)||'';
return t.replace(/\\{(\\w+)\\}/g,function(m,x){return x==='n'?(n===undefined?'':num(n)):(v&&x in v?v[x]:'')})}
var t0=Date.now(),cds=document.querySelectorAll('[data-in]');function two(n){return (n<10?'0':'')+n}
function cd(){for(var i=0;i<cds.length;i++){var c=cds[i],s=Math.max(0,Math.ceil(Number(c.getAttribute('data-in'))-(Date.now()-t0)/1000));
c.textContent=(s>=86400?say('countdown.days',0,Math.floor(s/86400))+' ':'')+two(Math.floor(s%86400/3600))+':'+two(Math.floor(s%3600/60))+':'+two(s%60)}}
if(cds.length){cd();setInterval(cd,1000)}
var me=document.currentScript,ver=me&&/[?&]v=([0-9a-z]+)/.exec(me.src);document.cookie='anteroom_js='+(ver?ver[1]:'0')+'; Path=/; SameSite=Lax; Max-Age=86400';
var room=el.getAttribute('data-room'),every=Number(el.getAttribute('data-refresh'))*1000,next=Number(el.getAttribute('data-next'))*1000||every;
function set(id,v){var n=document.getElementById(id);if(n)n.textContent=v}
function hm(m){return say('dur.hMin',{h:num(Math.floor(m/60)),m:num(m%60)})}
function mins(m){return m<60?say('dur.min',0,m):m%60===0?say('dur.h',0,m/60):hm(m)}
function eta(s){if(s===null)return say('eta.unknown');if(s<60)return say('eta.underMinute');var m=Math.round(s/60);return m<60?say('eta.minutes',0,m):say('eta.hours',{duration:hm(m)})}
function range(r){if(!r)return '';var l=Math.round(r[0]/60),h=Math.round(r[1]/60);if(h<1)return say('range.underMinute');if(l===h)return say('range.same');
if(l<1)return say('range.upTo',{high:h<60?say('dur.minutes',0,h):mins(h)});if(h<60)return say('range.minutes',{low:num(l)},h);return say('range.between',{low:mins(l),high:mins(h)})}
function tick(){fetch('/_anteroom/status?room='+encodeURIComponent(room),{headers:{accept:'application/json'},credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json()}).then(function(s){
if(s.state==='admitted'){location.reload();return}
if(s.state!==el.getAttribute('data-state')){location.reload();return}
if(typeof s.position==='number'){set('position',num(s.position));set('ahead',num(s.ahead));set('waiting',num(s.waiting));
var p=document.getElementById('progress');if(p&&s.waiting>0){p.value=Math.max(0,s.waiting-s.ahead);p.max=s.waiting}}
set('eta',eta(s.etaSeconds));var n=document.getElementById('eta-range');if(n){n.textContent=range(s.etaRange);n.hidden=!s.etaRange}
next=typeof s.nextPollSeconds==='number'&&s.nextPollSeconds>0?s.nextPollSeconds*1000:every}).catch(function(){next=every}).then(function(){setTimeout(tick,next)})}
setTimeout(tick,next)})()`

/** When a page without the script reloads (the Refresh header, the noscript meta): the next poll, in whole seconds. */
export function refreshAfter(v: VisitorStatus): number {
  return Math.max(1, Math.round(v.nextPollSeconds))
}

/** A page that will not change by itself: nothing to refresh or poll. */
export const finalState = (v: { state: string }) => v.state === 'closed' || v.state === 'ended'

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

const SHEET = `<link rel="stylesheet" href="${QUEUE_ASSETS.css.path}?v=${QUEUE_ASSETS.css.version}">`
const PAGE_TAIL_POLLING = `<script src="${QUEUE_ASSETS.js.path}?v=${QUEUE_ASSETS.js.version}"></script></body></html>`
const PAGE_TAIL_FINAL = '</body></html>'

/** `<html>` in the page's language and direction (dir only for right-to-left: left-to-right is the default). */
export function htmlTag(locale: Locale): string {
  return `<html lang="${locale}"${localeDir(locale) === 'rtl' ? ' dir="rtl"' : ''}>`
}

/** The page head up to its title: the edge's style sheet, then a template's own (already allowed and escaped), if any. */
function pageHead(locale: Locale, sheet?: string): string {
  return `<!doctype html>
${htmlTag(locale)}<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
${SHEET}${sheet === undefined ? '' : `<link rel="stylesheet" href="${sheet}">`}`
}

/** Text for a single-quoted attribute: JSON keeps its double quotes as they are. */
function singleQuoted(s: string): string {
  return s.replace(/[&'<>]|[\u00a0-\u{10ffff}]/gu, (c) => `&#${c.codePointAt(0)};`)
}

/** The script's words in the page's language (none in English: the script has them). */
const liveAttrs = new Map<Locale, string>()
function liveAttr(locale: Locale): string {
  if (locale === 'en') return ''
  let attr = liveAttrs.get(locale)
  if (attr === undefined) liveAttrs.set(locale, (attr = ` data-i18n='${singleQuoted(JSON.stringify(liveTexts(locale)))}'`))
  return attr
}

/**
 * The queue page. Its text is ASCII (escapeHtml), so a one-byte string. Everything but the visitor's
 * own numbers is its frame, the same for every visitor of a room in a state and a language and so made
 * once (frameFor): a page is the frame's four pieces and three numbers.
 */
export function queuePage(v: VisitorStatus, text: RoomText, locale: Locale = 'en'): string {
  const f = frameFor(v, text, locale)
  return `${f.head}${finalState(v) ? '' : refreshAfter(v)}${f.beforeNext}${v.nextPollSeconds}${f.beforeNumbers}${numbersBlock(v, f.texts)}${laneNote(v, f.texts)}${f.tail}`
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
  texts: Texts
  /** What else it was made from: a frame is used only for a page of the same. */
  room: string
  refreshSeconds: number
}

type Kept = { placed?: PageFrame; unplaced?: PageFrame }
/** A room text's frames, by language and state; a state's frame without a place (sold out to a newcomer) apart. */
const frames = new WeakMap<RoomText, Map<Locale, Map<string, Kept>>>()

/**
 * The visitor's frame, made once per room text (the room's settings: new ones when they change),
 * language, state and whether the visitor has a place. A scheduled room's page has the visitor's
 * ticket and the schedule's times in it: its frame is made for the page.
 */
function frameFor(v: VisitorStatus, text: RoomText, locale: Locale): PageFrame {
  if (v.schedule !== undefined || v.ticket !== undefined) return pageFrame(v, text, locale)
  let byLocale = frames.get(text)
  if (byLocale === undefined) frames.set(text, (byLocale = new Map()))
  let byState = byLocale.get(locale)
  if (byState === undefined) byLocale.set(locale, (byState = new Map()))
  let kept = byState.get(v.state)
  if (kept === undefined) byState.set(v.state, (kept = {}))
  const placed = v.position !== null
  let f = placed ? kept.placed : kept.unplaced
  if (f === undefined || f.room !== v.room || f.refreshSeconds !== v.refreshSeconds) {
    f = pageFrame(v, text, locale)
    if (placed) kept.placed = f
    else kept.unplaced = f
  }
  return f
}

/** The room's title and message: as the room wrote them, or its defaults in the page's language. */
export function roomWords(text: RoomText, t: Texts, html: boolean): { title: string; message: string } {
  const own = (value: string, fallback: string, key: 'queued.title' | 'queued.message') =>
    value === fallback && t.locale !== 'en' ? (html ? t.html(key) : t.say(key)) : html ? escapeRoomText(value) : value
  return {
    title: own(text.title, ROOM_SETTINGS.title.default, 'queued.title'),
    message: own(text.message, ROOM_SETTINGS.message.default, 'queued.message'),
  }
}

/** The state's headline and sentence (the room's own words while queued), as text or HTML. */
export function stateWords(
  v: Pick<VisitorStatus, 'state' | 'position' | 'schedule'>,
  text: RoomText,
  t: Texts,
  html: boolean,
): { headline: string; lead: string } {
  const say = (key: Parameters<Texts['say']>[0], vars?: Vars) => (html ? t.html(key, vars) : t.say(key, vars))
  const time = (iso: string) => (html ? escapeHtml(t.scheduleTime(iso)) : t.scheduleTime(iso))
  switch (v.state) {
    case 'closed':
    case 'ended':
    case 'busy':
    case 'paused':
    case 'recovering':
      return { headline: say(`${v.state}.headline`), lead: say(`${v.state}.lead`) }
    case 'scheduled':
      return {
        headline: say('scheduled.headline'),
        lead: v.schedule ? say('scheduled.lead', { prequeueAt: time(v.schedule.prequeueAt), opensAt: time(v.schedule.opensAt) }) : '',
      }
    case 'prequeue':
      return { headline: say('prequeue.headline'), lead: v.schedule ? say('prequeue.lead', { opensAt: time(v.schedule.opensAt) }) : '' }
    case 'sold_out':
      return { headline: say('soldOut.headline'), lead: say(v.position === null ? 'soldOut.leadNoPlace' : 'soldOut.leadPlace') }
    case 'all_held':
      return { headline: say('allHeld.headline'), lead: say('allHeld.lead') }
    default: {
      const words = roomWords(text, t, html)
      return { headline: words.title, lead: words.message }
    }
  }
}

/**
 * The shell every queue page shares, built-in or a room's template, around its body: `head` ends
 * where the noscript refresh's seconds go (none for a page that does not move: a final one, or a
 * preview), `open` where data-next's seconds go, `close` after the body. `sheet` is a template's
 * allowed style sheet URL, as HTML.
 */
export function pageShell(
  v: Pick<VisitorStatus, 'room' | 'refreshSeconds'> & { state: string },
  locale: Locale,
  title: string,
  sheet?: string,
  moves: boolean = !finalState(v),
): { head: string; open: string; close: string } {
  const final = !moves
  return {
    head: `${pageHead(locale, sheet)}<title>${title}</title>${final ? '' : '<noscript><meta http-equiv="refresh" content="'}`,
    open: `${final ? '' : '"></noscript>'}</head>
<body><main id="anteroom" data-room="${escapeRoomText(v.room)}" data-state="${v.state}" data-refresh="${v.refreshSeconds}"${liveAttr(locale)} data-next="`,
    close: `</main>${final ? PAGE_TAIL_FINAL : PAGE_TAIL_POLLING}`,
  }
}

/** The page around the visitor's numbers. */
function pageFrame(v: VisitorStatus, text: RoomText, locale: Locale): PageFrame {
  const t = texts(locale)
  const { headline, lead } = stateWords(v, text, t, true)
  const refreshes = finalState(v) ? '' : `<p class="muted">${t.html('page.refreshes', undefined, v.refreshSeconds)}</p>`
  const shell = pageShell(v, locale, headline)
  return {
    head: flat(shell.head),
    beforeNext: flat(shell.open),
    beforeNumbers: flat(`">
<div class="card" role="region" aria-labelledby="headline">
<h1 id="headline">${headline}</h1>
<p>${lead}</p>
<div role="status" aria-live="polite" aria-atomic="false">`),
    tail: flat(`</div>${drawBlock(v, t)}${accessForm(v, text, t)}
${refreshes}
</div>${shell.close}`),
    texts: t,
    room: v.room,
    refreshSeconds: v.refreshSeconds,
  }
}

/** The numbers block's fixed pieces in a language, around the visitor's numbers. */
interface NumberPieces {
  position: string
  max: string
  value: string
  ahead: string
  waiting: string
  eta: string
  range: string
}
const numberPieces = new Map<Locale, NumberPieces>()
function piecesFor(t: Texts): NumberPieces {
  let p = numberPieces.get(t.locale)
  if (p === undefined) {
    p = {
      position: flat(`<p class="muted">${t.html('numbers.position')}</p>
<p class="big" id="position">`),
      max: '</p>\n<progress id="progress" max="',
      value: '" value="',
      ahead: flat(`" aria-label="${t.html('numbers.progress')}"></progress>
<dl>
<div><dt>${t.html('numbers.ahead')}</dt><dd id="ahead">`),
      waiting: flat(`</dd></div>
<div><dt>${t.html('numbers.waiting')}</dt><dd id="waiting">`),
      eta: flat(`</dd></div>
<div><dt>${t.html('numbers.eta')}</dt><dd id="eta">`),
      range: '</dd></div>\n</dl>\n<p class="muted" id="eta-range"',
    }
    numberPieces.set(t.locale, p)
  }
  return p
}

/** A count as HTML: ASCII digits in English, a character reference for any other character (i18n.ts). */
function countHtml(t: Texts, n: number): string {
  return t.countHtml(n)
}

/** The visitor's own numbers: their place, the line and the wait, or a scheduled room's countdown. */
function numbersBlock(v: VisitorStatus, t: Texts): string {
  if (v.state === 'scheduled' || v.state === 'prequeue') return scheduleBlock(v, t)
  if (v.position === null) return ''
  const p = piecesFor(t)
  return `${p.position}${countHtml(t, v.position)}${p.max}${v.waiting ?? 1}${p.value}${Math.max(0, (v.waiting ?? 0) - (v.ahead ?? 0))}${p.ahead}${countHtml(t, v.ahead ?? 0)}${p.waiting}${countHtml(t, v.waiting ?? 0)}${p.eta}${t.eta(v.etaSeconds, true)}${p.range}${v.etaRange === null ? ' hidden' : ''}>${t.etaRange(v.etaRange, true)}</p>`
}

/** A scheduled room before its opening: the countdown, and how many are in the pre-queue. */
function scheduleBlock(v: VisitorStatus, t: Texts): string {
  const s = v.schedule
  if (s === undefined) return ''
  const pre = v.state === 'scheduled'
  const count = pre ? '' : `<dl><div><dt>${t.html('schedule.waiting')}</dt><dd id="waiting">${countHtml(t, v.waiting ?? 0)}</dd></div></dl>`
  const seconds = pre ? s.prequeueInSeconds : s.opensInSeconds
  return `<p class="muted">${t.html(pre ? 'schedule.prequeueIn' : 'schedule.opensIn')}</p>
<p class="big" id="countdown" data-in="${seconds}">${escapeHtml(t.countdown(seconds))}</p>${count}`
}

/** A scheduled room: the visitor's ticket, and after the draw their value and rank, with how to check them. */
function drawBlock(v: VisitorStatus, t: Texts): string {
  if (v.ticket === undefined) return ''
  const ticket = `<p class="muted">${t.html('draw.ticket', { ticket: `<code id="ticket">${escapeHtml(v.ticket)}</code>` })}</p>`
  if (v.draw === undefined) return ticket
  const rank = `<strong>${t.html('draw.rank', undefined, v.draw.rank)}</strong>`
  const value = `<code>${escapeHtml(v.draw.value.slice(0, 16))}&hellip;</code>`
  const link = `<a href="${escapeHtml(v.draw.check)}">${t.html('draw.link')}</a>`
  const formula = `${escapeHtml(v.room)}:${t.html('draw.yourTicket')}`
  return `${ticket}
<p class="muted" id="draw">${t.html('draw.drawn', { rank, value })}
${t.html('draw.check', { link, formula })}</p>`
}

/** A visitor's error page, in their language: `title` and `detail` are text. */
export function errorPage(status: number, title: string, detail: string, locale: Locale = 'en'): string {
  return `<!doctype html>
${htmlTag(locale)}<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main><div class="card" role="alert"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p>
<p class="muted">${texts(locale).html('error.status', { status: String(status) })}</p></div></main></body></html>`
}

/**
 * A visitor's error page in their language: the catalogue's title and text for the code. In English,
 * or for a code the catalogues do not have, the registry's words (and an error's own message, when it
 * is one for clients).
 */
export function visitorErrorPage(p: Problem, locale: Locale): string {
  const title = `error.${p.code}.title` as MessageKey
  if (locale === 'en' || !Object.hasOwn(CATALOGUES.en, title)) return errorPage(p.status, p.title, p.detail, locale)
  const t = texts(locale)
  return errorPage(p.status, t.say(title), t.say(`error.${p.code}.detail` as MessageKey), locale)
}
