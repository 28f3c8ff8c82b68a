// The human check's answers to a newcomer who has not passed it (human-check.ts): the status as JSON
// (state "human_check", with the widget's site key), or the page that runs the widget. The page has
// no inline script: its own script is the edge's file /_anteroom/human-check.js, and its CSP allows
// that file and the widget provider's origin (script-src and frame-src, as Turnstile documents) and
// nothing else; only this page, of a room that uses the check, allows the provider at all. Its words
// are the catalogues' humanCheck.* texts, in the visitor's language (chosen as the queue page's is:
// responses.ts visitorLocale); the script holds none of its own and is handed them in data-msg-*
// attributes.
import type { Context } from 'hono'
import { HUMAN_CHECK_HEADER, type HumanCheckStatus } from '../core/human-check.js'
import type { Locale } from '../core/locales.js'
import type { RoomSettings } from '../core/settings.js'
import { escapeHtml } from './html.js'
import { texts } from './i18n.js'
import { htmlTag, STYLE } from './pages.js'
import { type Incoming, ownSource } from './request.js'
import { langCookie, NO_STORE, PAGE_VARY, visitorLocale } from './responses.js'

export const HUMAN_CHECK_SCRIPT_PATH = '/_anteroom/human-check.js'

/**
 * The page's script: waits for the provider's widget script, renders the widget (explicitly, in the
 * page's box), sends the token it yields with a status request (which sets the queue cookie: a place,
 * or the shadow lane's), then reloads into the queue page. A check that could not be made (503) or did
 * not go through asks for the widget again.
 */
export const HUMAN_CHECK_SCRIPT = `(function(){var el=document.getElementById('anteroom');if(!el)return;
function d(k){return el.getAttribute('data-'+k)}
var st=document.getElementById('hc-state'),box=document.getElementById('hc-widget'),id=null,waited=0;
function say(k){st.textContent=d('msg-'+k)||''}
function again(k){say(k);if(window.turnstile&&id!==null)window.turnstile.reset(id)}
function send(token){say('checking');var h={accept:'application/json'};h['${HUMAN_CHECK_HEADER}']=token;
fetch('/_anteroom/status?room='+encodeURIComponent(d('room')),{headers:h,credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json().then(function(b){return{ok:r.ok,status:r.status,b:b}})}).then(function(x){var b=x.b||{};
if(x.ok&&b.state&&b.state!=='human_check'){say('done');el.setAttribute('data-state',b.state);location.reload();return}
again(x.status===503?'unavailable':'again')}).catch(function(){say('offline');setTimeout(function(){location.reload()},Number(d('refresh'))*1000)})}
function render(){if(!window.turnstile||typeof window.turnstile.render!=='function'){if((waited+=50)>15000){say('blocked');return}setTimeout(render,50);return}
say('ready');id=window.turnstile.render(box,{sitekey:d('sitekey'),action:d('action'),cData:d('cdata'),callback:send,
'error-callback':function(){again('again')},'expired-callback':function(){if(id!==null)window.turnstile.reset(id)}})}
say('loading');render()})()`

/** The script's version, in its URL: a new release's page never runs the last one's script from a cache. */
const SCRIPT_VERSION = (() => {
  let h = 0x811c9dc5
  for (let i = 0; i < HUMAN_CHECK_SCRIPT.length; i++) h = Math.imul(h ^ HUMAN_CHECK_SCRIPT.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(36)
})()

/** GET /_anteroom/human-check.js. */
export function serveHumanCheckScript(c: Context): Response {
  return c.body(HUMAN_CHECK_SCRIPT, 200, {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': c.req.query('v') === SCRIPT_VERSION ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
    'x-content-type-options': 'nosniff',
  })
}

/** The origin (scheme, host, port) of the widget's script: the page's CSP allows its scripts and frames. */
function widgetOrigin(scriptUrl: string): string {
  return new URL(scriptUrl).origin
}

/** A newcomer who must pass the human check: the status as JSON, or the page with the widget. */
export function humanCheckResponse(req: Incoming, room: RoomSettings, status: HumanCheckStatus, json: boolean): Response {
  const headers: Record<string, string> = { 'cache-control': NO_STORE }
  if (json) {
    headers['content-type'] = 'application/json; charset=utf-8'
    return new Response(JSON.stringify(status), { headers })
  }
  const provider = widgetOrigin(status.humanCheck.scriptUrl)
  headers['content-type'] = 'text/html; charset=utf-8'
  headers['content-security-policy'] =
    `default-src 'none'; style-src 'unsafe-inline'; script-src ${ownSource(req, HUMAN_CHECK_SCRIPT_PATH)} ${provider}; frame-src ${provider}; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
  headers['x-content-type-options'] = 'nosniff'
  headers['referrer-policy'] = 'no-referrer'
  headers.vary = PAGE_VARY
  const { locale, keep } = visitorLocale(req, room)
  const page = humanCheckPage(room, status, locale)
  if (keep === undefined) return new Response(page, { headers })
  const list = new Headers(headers)
  list.append('set-cookie', langCookie(keep, req.secure))
  return new Response(page, { headers: list })
}

/** What the script says, by step (data-msg-<step>): the catalogue's humanCheck.<step>; `ready` says nothing. */
const SCRIPT_STEPS = ['loading', 'checking', 'done', 'again', 'unavailable', 'offline', 'blocked'] as const

function widgetScript(scriptUrl: string): string {
  const url = new URL(scriptUrl)
  // Rendered by our script into our box, not wherever the provider's script would put it.
  url.searchParams.set('render', 'explicit')
  return url.toString()
}

function humanCheckPage(room: RoomSettings, status: HumanCheckStatus, locale: Locale): string {
  const t = texts(locale)
  const { humanCheck } = status
  const messages = SCRIPT_STEPS.map((step) => ` data-msg-${step}="${t.html(`humanCheck.${step}`)}"`).join('')
  return `<!doctype html>
${htmlTag(locale)}<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${t.html('humanCheck.title')}</title><style>${STYLE}</style></head>
<body><main id="anteroom" data-room="${escapeHtml(room.id)}" data-state="human_check" data-refresh="${status.refreshSeconds}" data-sitekey="${escapeHtml(humanCheck.siteKey)}" data-action="${escapeHtml(humanCheck.action)}" data-cdata="${escapeHtml(humanCheck.cData)}"${messages}>
<div class="card" role="region" aria-labelledby="headline">
<h1 id="headline">${t.html('humanCheck.title')}</h1>
<p>${t.html('humanCheck.lead')}</p>
<div id="hc-widget"></div>
<p class="muted" id="hc-state" role="status" aria-live="polite"></p>
<noscript><p><strong>${t.html('humanCheck.noscript')}</strong></p></noscript>
</div></main><script src="${escapeHtml(widgetScript(humanCheck.scriptUrl))}" async defer></script><script src="${HUMAN_CHECK_SCRIPT_PATH}?v=${SCRIPT_VERSION}"></script></body></html>`
}
