// The human check before a place in line (room setting humanCheck: "turnstile"): a newcomer's browser
// runs a Turnstile-compatible widget, the token it yields goes to the edge (header Anteroom-Human-
// Check), and the edge asks the provider's siteverify endpoint about it (ports/site-verifier.ts). This
// module judges the answer, with no I/O: passed (a place in the real line), failed (the shadow lane,
// core/shadow.ts: a queue page that never moves them in), or nothing known (an error or a timeout: the
// room's humanCheckOnError says whether they get a place anyway).
import type { SiteVerifyAnswer } from '../ports/site-verifier.js'
import { ROOM_SETTINGS, type RoomSettings } from './settings.js'
import { noPlace, type VisitorStatus } from './visit.js'

export const HUMAN_CHECK_MODES = ROOM_SETTINGS.humanCheck.values
export type HumanCheckMode = (typeof HUMAN_CHECK_MODES)[number]
/** What a room does while siteverify cannot say: hold newcomers (no place; try again) or let them join the line unchecked. */
export const HUMAN_CHECK_ON_ERROR = ROOM_SETTINGS.humanCheckOnError.values

/** The request header a client answers with. Like every anteroom-* header, it never reaches the origin. */
export const HUMAN_CHECK_HEADER = 'anteroom-human-check'
/** The widget's action: siteverify must say it back. */
export const HUMAN_CHECK_ACTION = 'anteroom-join'
/** Turnstile's tokens are at most 2,048 characters. */
export const MAX_HUMAN_CHECK_TOKEN = 2048

export type HumanCheckOutcome = 'passed' | 'failed' | 'error' | 'timeout'
/** Outcomes counted (anteroom_human_checks_total): `asked` is a newcomer shown the widget. */
export const HUMAN_CHECK_COUNTED = ['asked', 'passed', 'failed', 'error', 'timeout'] as const
export type HumanCheckCounted = (typeof HUMAN_CHECK_COUNTED)[number]

/** The widget, as a JSON client gets it in the status body (state "human_check"). */
export interface HumanCheckInfo {
  siteKey: string
  action: string
  /** Bound into the token: the room's id. */
  cData: string
  /** Where the answer goes: `Anteroom-Human-Check: <token>`. */
  header: 'Anteroom-Human-Check'
  /** The widget's script, for a client that renders it. */
  scriptUrl: string
}

/** The answer to a newcomer of a room with a human check who has not answered it: no place yet, so no numbers. */
export interface HumanCheckStatus extends Omit<VisitorStatus, 'state'> {
  state: 'human_check'
  humanCheck: HumanCheckInfo
}

/** The provider as configured (ANTEROOM_HUMAN_CHECK_*): what the page and the status show. */
export interface HumanCheckWidget {
  siteKey: string
  scriptUrl: string
}

export function asksHumanCheck(room: RoomSettings): boolean {
  return room.humanCheck !== 'off' && room.mode !== 'closed'
}

export function humanCheckStatus(room: RoomSettings, widget: HumanCheckWidget): HumanCheckStatus {
  return {
    room: room.id,
    state: 'human_check',
    ...noPlace(room),
    humanCheck: {
      siteKey: widget.siteKey,
      action: HUMAN_CHECK_ACTION,
      cData: room.id,
      header: 'Anteroom-Human-Check',
      scriptUrl: widget.scriptUrl,
    },
  }
}

/** Whether a token is worth asking siteverify about: printable ASCII without spaces, at most 2,048 characters. */
export function plausibleToken(token: string): boolean {
  return token.length > 0 && token.length <= MAX_HUMAN_CHECK_TOKEN && /^[\x21-\x7e]+$/.test(token)
}

/** What the token must have been made for: the page's host, our action, the room. */
export interface Expected {
  hostname: string
  cdata: string
}

export interface HumanCheckJudgement {
  outcome: HumanCheckOutcome
  /** Why, for the log: error codes, a mismatch. Never the token. */
  reason: string
}

/**
 * Error codes that say our side is wrong (the secret), not the visitor: the room's error policy
 * applies, never the shadow lane, or a misconfigured edge would shadow every human.
 */
const OUR_FAULT = new Set(['missing-input-secret', 'invalid-input-secret', 'bad-request', 'internal-error'])

/** Judges siteverify's answer: success, for our action and room, on the host the page was served from. */
export function judgeSiteVerify(answer: SiteVerifyAnswer, expected: Expected): HumanCheckJudgement {
  if (answer.kind === 'timeout') return { outcome: 'timeout', reason: 'siteverify did not answer in time' }
  if (answer.kind === 'error') return { outcome: 'error', reason: answer.reason }
  const body = answer.body
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { outcome: 'error', reason: 'siteverify did not answer a JSON object' }
  const b = body as Record<string, unknown>
  const codes = Array.isArray(b['error-codes']) ? b['error-codes'].filter((c): c is string => typeof c === 'string').slice(0, 8) : []
  if (b.success !== true) {
    if (codes.some((c) => OUR_FAULT.has(c))) return { outcome: 'error', reason: `siteverify: ${codes.join(', ')}` }
    return { outcome: 'failed', reason: codes.length > 0 ? `siteverify: ${codes.join(', ')}` : 'siteverify: not a success' }
  }
  // A token solved elsewhere (another site, another room, another widget) is not this check passed.
  if (typeof b.hostname !== 'string' || b.hostname.toLowerCase() !== expected.hostname)
    return { outcome: 'failed', reason: 'the token was made for another host' }
  if (b.action !== HUMAN_CHECK_ACTION) return { outcome: 'failed', reason: 'the token was made for another action' }
  if (b.cdata !== expected.cdata) return { outcome: 'failed', reason: 'the token was made for another room' }
  return { outcome: 'passed', reason: 'siteverify: success' }
}
