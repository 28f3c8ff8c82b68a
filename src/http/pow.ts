// Proof of work at join (core/pow.ts) at the edge: the gate that a visitor without a queue token passes
// in a room with powDifficulty > 0, the answer to one who has not (the challenge as JSON, or the page
// that solves it in a Web Worker), and that worker's script, served from GET /_anteroom/pow-worker.js.
import type { Context } from 'hono'
import { AnteroomError, type ErrorCode } from '../core/errors.js'
import type { Locale } from '../core/locales.js'
import { type ChallengeStatus, challengeStatus, POW_HEADER, type PowProblem } from '../core/pow.js'
import type { RoomSettings } from '../core/settings.js'
import type { EdgeContext } from './edge-context.js'
import { texts } from './i18n.js'
import { type CompiledTemplate, renderTemplate, templatePolicy, templateView } from './page-templates.js'
import { escapeHtml, QUEUE_ASSETS, STYLE } from './pages.js'
import { POW_PAGE_SCRIPT, POW_WORKER_PATH, POW_WORKER_SCRIPT } from './pow-scripts.js'
import { type Incoming, ownSource } from './request.js'
import { langCookie, NO_STORE, PAGE_VARY, visitorLocale } from './responses.js'

export { POW_PAGE_SCRIPT, POW_WORKER_PATH, POW_WORKER_SCRIPT }

/** Whether a new visitor of this room must solve a challenge first. A closed room gives no places anyway. */
export function asksPow(room: RoomSettings): boolean {
  return room.powDifficulty > 0 && room.mode !== 'closed'
}

/** A valid answer (the visitor id it was issued for), or a fresh challenge, with why the answer sent was refused. */
export type PowGate = { kind: 'pass'; visitor: string } | { kind: 'refused'; problem?: PowProblem; status: ChallengeStatus }

/** Checks the visitor's answer, if any; no store call either way. */
export async function powGate(edge: EdgeContext, room: RoomSettings, req: Incoming): Promise<PowGate> {
  const now = edge.now()
  if (req.powAnswer !== null) {
    const check = await edge.deps.pow.check(req.powAnswer, room.id, room.powDifficulty, now)
    if (check.ok) return { kind: 'pass', visitor: check.challenge.visitor }
    return { kind: 'refused', problem: check.problem, status: await fresh(edge, room, now) }
  }
  return { kind: 'refused', status: await fresh(edge, room, now) }
}

async function fresh(edge: EdgeContext, room: RoomSettings, now: number): Promise<ChallengeStatus> {
  return challengeStatus(room, await edge.deps.pow.issue(room.id, room.powDifficulty, now), now)
}

const REFUSED: Record<PowProblem, [ErrorCode, string]> = {
  malformed: ['ERR_POW_INVALID', 'The Anteroom-Pow answer is not <challenge>.<nonce>; solve error.challenge'],
  forged: ['ERR_POW_INVALID', 'The Anteroom-Pow challenge was not issued by this waiting room; solve error.challenge'],
  'wrong-room': ['ERR_POW_INVALID', 'The Anteroom-Pow challenge is for another room; solve error.challenge'],
  expired: ['ERR_POW_EXPIRED', 'The challenge has expired; solve error.challenge'],
  insufficient: ['ERR_POW_INSUFFICIENT', 'The answer does not have enough leading zero bits; solve error.challenge'],
}

/** The error for an answer refused: a 4xx that carries a fresh challenge. */
export function powRefusal(problem: PowProblem, status: ChallengeStatus): AnteroomError {
  const [code, message] = REFUSED[problem]
  return new AnteroomError(code, message, { field: POW_HEADER, extra: { challenge: status.challenge } })
}

/** A visitor who must solve a challenge: the challenge as JSON, or the page that solves it. */
export async function challengeResponse(
  edge: EdgeContext,
  req: Incoming,
  room: RoomSettings,
  status: ChallengeStatus,
  json: boolean,
): Promise<Response> {
  const headers: Record<string, string> = { 'cache-control': NO_STORE }
  if (json) {
    headers['content-type'] = 'application/json; charset=utf-8'
    return new Response(JSON.stringify(status), { headers })
  }
  const { locale, keep } = visitorLocale(req, room)
  const template = edge.deps.pages?.get(room.template)
  const script = `script-src 'sha256-${await edge.powScriptHash}'; worker-src ${ownSource(req, POW_WORKER_PATH)}; connect-src 'self'`
  headers['content-type'] = 'text/html; charset=utf-8'
  // A template's page links the edge's style sheet and its own; the built-in one has its styles inline.
  headers['content-security-policy'] =
    template === undefined
      ? `default-src 'none'; style-src 'unsafe-inline'; ${script}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
      : template.sheet === undefined
        ? `default-src 'none'; style-src ${ownSource(req, QUEUE_ASSETS.css.path)}; ${script}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
        : `${templatePolicy(ownSource(req, QUEUE_ASSETS.css.path), undefined, template.sheet)}; ${script}; frame-ancestors 'none'`
  headers['x-content-type-options'] = 'nosniff'
  headers['referrer-policy'] = 'no-referrer'
  headers.vary = PAGE_VARY
  const page = challengePage(room, status, locale, template)
  if (keep === undefined) return new Response(page, { headers })
  const list = new Headers(headers)
  list.append('set-cookie', langCookie(keep, req.secure))
  return new Response(page, { headers: list })
}

/** GET /_anteroom/pow-worker.js: the solver, run by the challenge page in a Web Worker. */
export function serveWorkerScript(c: Context): Response {
  return c.body(POW_WORKER_SCRIPT, 200, {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'public, max-age=3600',
    // A worker gets the policy of its own script: it needs nothing but crypto.subtle.
    'content-security-policy': "default-src 'none'",
    'x-content-type-options': 'nosniff',
  })
}

/** The script's words in the page's language (data-words; in English, its own). */
const CHALLENGE_WORDS = ['working', 'broken', 'done', 'failed', 'retry'] as const

/** The challenge page, in the visitor's language; with a room's template, its body in the edge's shell. */
function challengePage(room: RoomSettings, status: ChallengeStatus, locale: Locale, template: CompiledTemplate | undefined): string {
  const { challenge } = status
  const t = texts(locale)
  const words =
    locale === 'en'
      ? ''
      : ` data-words="${escapeHtml(JSON.stringify(Object.fromEntries(CHALLENGE_WORDS.map((w) => [w, t.say(`challenge.${w}`)]))))}"`
  const head = `<!doctype html>
<html lang="${locale}"${t.dir === 'rtl' ? ' dir="rtl"' : ''}><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${t.html('challenge.headline')}</title>`
  const styles =
    template === undefined
      ? `<style>${STYLE}</style>`
      : `<link rel="stylesheet" href="${QUEUE_ASSETS.css.path}?v=${QUEUE_ASSETS.css.version}">${template.sheet === undefined ? '' : `<link rel="stylesheet" href="${template.sheet.html}">`}`
  const state = `<p class="muted" id="pow-state" role="status" aria-live="polite"></p>
<noscript><p><strong>${t.html('challenge.noscript')}</strong> ${t.html('challenge.noscriptHelp')}</p></noscript>`
  const body =
    template === undefined
      ? `<div class="card" role="region" aria-labelledby="headline">
<h1 id="headline">${t.html('challenge.headline')}</h1>
<p>${t.html('challenge.lead')}</p>
${state}
</div>`
      : `${renderTemplate(template, templateView({ ...status, state: 'challenge', room: room.id }, room, locale))}
${state}`
  return `${head}${styles}</head>
<body><main id="anteroom" data-room="${escapeHtml(room.id)}" data-state="challenge" data-refresh="${status.refreshSeconds}" data-challenge="${escapeHtml(challenge.value)}" data-difficulty="${challenge.difficulty}"${words}>
${body}</main><script>${POW_PAGE_SCRIPT}</script></body></html>`
}
