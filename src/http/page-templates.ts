// A room's own queue page (its `template` setting): the edge's copy of the templates its rooms use,
// kept fresh with the rooms' once-a-second reload (one revisions call; a template is read again only
// when its revision moved), each checked again and parsed once (core/page-template.ts); the view a
// template is rendered with; and the page: the template's output inside the edge's shell (pages.ts
// pageShell), so the head, the policy and the script stay the edge's. Previews render the same with
// sample values for the admin UI.
import Mustache from 'mustache'
import { BoundedMap } from '../core/bounded-map.js'
import type { Locale } from '../core/locales.js'
import { checkStylesheet, checkTemplate, type PageTemplate, STATE_FLAGS, type TemplateState } from '../core/page-template.js'
import type { RoomSettings } from '../core/settings.js'
import type { VisitorStatus } from '../core/visit.js'
import type { TemplateStore, VersionedTemplate } from '../ports/template-store.js'
import { escapeHtml } from './html.js'
import { LIVE_KEYS, type Texts, texts } from './i18n.js'
import { en, type MessageKey } from './locales/en.js'
import { finalState, pageShell, type RoomText, refreshAfter, roomWords, stateWords } from './pages.js'

/**
 * The catalogue's keys a template reads as t.<key>: the page's texts, not the pieces the page and its
 * script write waits and countdowns with, nor the error pages'. Their placeholders are the page's own
 * (the refresh, the schedule's times), filled in.
 */
export const TEMPLATE_TEXT_KEYS: readonly MessageKey[] = (Object.keys(en) as MessageKey[]).filter(
  (key) =>
    !key.startsWith('error.') &&
    !key.startsWith('humanCheck.') &&
    !(LIVE_KEYS as readonly string[]).includes(key) &&
    !key.startsWith('draw.') &&
    key !== 'schedule.at',
)

/** A template ready to render: its tokens, and its style sheet if its origin is (still) allowed. */
export interface CompiledTemplate {
  name: string
  rev: number
  source: string
  tokens: unknown[]
  /** The style sheet: its URL as HTML, the CSP source that names it (no query), and its origin. */
  sheet: { html: string; csp: string; origin: string } | undefined
}

/** Characters outside ASCII as character references: a page stays a one-byte string (html.ts). */
function asciiText(s: string): string {
  return s.replace(/[\u0080-\u{10ffff}]/gu, (c) => `&#${c.codePointAt(0)};`)
}

/** The template's literal text in ASCII, throughout its sections. */
function asciiTokens(tokens: unknown[]): unknown[] {
  return tokens.map((token) => {
    const t = [...(token as unknown[])]
    if (t[0] === 'text') t[1] = asciiText(t[1] as string)
    if (Array.isArray(t[4])) t[4] = asciiTokens(t[4])
    return t
  })
}

const writer = new Mustache.Writer()
;(writer as unknown as { templateCache: undefined }).templateCache = undefined
const RENDER = { escape: (value: unknown) => escapeHtml(String(value)) }

/**
 * A stored template checked again (the rules may have changed since it was saved) and parsed; its
 * style sheet only while its origin is allowed. Throws ERR_TEMPLATE_INVALID for a source that no
 * longer passes.
 */
export function compileTemplate(v: VersionedTemplate, styleOrigins: readonly string[]): CompiledTemplate {
  const { name, source } = checkTemplate({ name: v.template.name, source: v.template.source }, { styleOrigins, texts: TEMPLATE_TEXT_KEYS })
  let sheet: CompiledTemplate['sheet']
  try {
    const href = checkStylesheet(v.template.stylesheet, styleOrigins)
    if (href !== null) {
      const url = new URL(href)
      sheet = { html: escapeHtml(href), csp: `${url.origin}${url.pathname}`, origin: url.origin }
    }
  } catch {
    // An origin no longer allowed: the page goes without the sheet (its policy would block it anyway).
    sheet = undefined
  }
  return { name, rev: v.rev, source, tokens: asciiTokens(writer.parse(source)), sheet }
}

/** The templates this edge's rooms use, as the store had them at the last reload. */
export class PageTemplates {
  private readonly compiled = new Map<string, CompiledTemplate>()
  /** Templates found invalid, by name and revision, logged once. */
  private readonly refused = new Set<string>()

  constructor(
    private readonly store: Pick<TemplateStore, 'revisions' | 'get'>,
    readonly styleOrigins: readonly string[],
    private readonly log: (event: string, fields: Record<string, unknown>) => void = () => {},
  ) {}

  /** A room's template, if it names one this edge has; otherwise its page is the built-in one. */
  get(name: string | null): CompiledTemplate | undefined {
    return name === null ? undefined : this.compiled.get(name)
  }

  /** Brings the templates the rooms name up to date: one revisions call, then a read for each that moved. */
  async reload(rooms: readonly RoomSettings[]): Promise<void> {
    const names = [...new Set(rooms.flatMap((r) => (r.template === null ? [] : [r.template])))]
    for (const name of this.compiled.keys()) if (!names.includes(name)) this.compiled.delete(name)
    if (names.length === 0) return
    const revs = await this.store.revisions(names)
    await Promise.all(
      names.map(async (name, i) => {
        if (this.compiled.get(name)?.rev === revs[i]) return
        const found = await this.store.get(name)
        if (found === undefined) {
          this.compiled.delete(name)
          return
        }
        try {
          this.compiled.set(name, compileTemplate(found, this.styleOrigins))
        } catch (err) {
          this.compiled.delete(name)
          const key = `${name}:${found.rev}`
          if (!this.refused.has(key)) this.log('template_invalid', { template: name, rev: found.rev, message: (err as Error).message })
          this.refused.add(key)
        }
      }),
    )
  }
}

// --- the view ------------------------------------------------------------------------------------

/** A status as a template sees it: a visitor's, or a newcomer's before a proof of work. */
export type TemplateStatus = Pick<VisitorStatus, 'room' | 'position' | 'ahead' | 'waiting' | 'etaSeconds' | 'etaRange'> &
  Pick<VisitorStatus, 'refreshSeconds' | 'nextPollSeconds' | 'schedule' | 'ticket' | 'draw'> & { state: TemplateState }

/** Nested t: numbers.position → { numbers: { position } }. */
function nest(entries: [string, string][]): Record<string, unknown> {
  const root: Record<string, unknown> = {}
  for (const [key, value] of entries) {
    const parts = key.split('.')
    let at = root
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>
    at[parts[parts.length - 1] as string] = value
  }
  return root
}

/** The t of a language, a refresh and a schedule: made once for each. */
const pageTexts = new BoundedMap<string, Record<string, unknown>>(256)
function textsView(t: Texts, v: TemplateStatus): Record<string, unknown> {
  const key = `${t.locale}|${v.refreshSeconds}|${v.schedule?.prequeueAt ?? ''}|${v.schedule?.opensAt ?? ''}`
  let view = pageTexts.get(key)
  if (view === undefined) {
    const vars: Record<string, string> = v.schedule
      ? { prequeueAt: t.scheduleTime(v.schedule.prequeueAt), opensAt: t.scheduleTime(v.schedule.opensAt) }
      : {}
    view = nest(TEMPLATE_TEXT_KEYS.map((k) => [k, t.say(k, vars, k === 'page.refreshes' ? v.refreshSeconds : undefined)]))
    pageTexts.set(key, view)
  }
  return view
}

/** Every documented variable (core/page-template.ts TEMPLATE_VARIABLES) for one page. */
export function templateView(v: TemplateStatus, text: RoomText, locale: Locale): Record<string, unknown> {
  const t = texts(locale)
  const words =
    v.state === 'challenge'
      ? { headline: t.say('challenge.headline'), lead: t.say('challenge.lead') }
      : stateWords(v as VisitorStatus, text, t, false)
  const own = roomWords(text, t, false)
  const placed = v.position !== null
  const count = (n: number | null) => (n === null ? '' : t.count(n))
  const s = v.schedule
  const countdown = s === undefined ? 0 : v.state === 'scheduled' ? s.prequeueInSeconds : s.opensInSeconds
  return {
    lang: locale,
    dir: t.dir,
    room: v.room,
    state: v.state,
    [STATE_FLAGS[v.state]]: true,
    title: own.title,
    message: own.message,
    headline: words.headline,
    lead: words.lead,
    hasPlace: placed,
    position: count(v.position),
    ahead: count(v.ahead),
    waiting: count(v.waiting),
    progressValue: placed ? String(Math.max(0, (v.waiting ?? 0) - (v.ahead ?? 0))) : '',
    progressMax: placed ? String(v.waiting ?? 1) : '',
    eta: placed || v.etaSeconds !== null ? t.eta(v.etaSeconds) : '',
    etaSeconds: v.etaSeconds === null ? '' : String(v.etaSeconds),
    etaRange: t.etaRange(v.etaRange),
    refreshSeconds: String(v.refreshSeconds),
    nextPollSeconds: String(v.nextPollSeconds),
    ticket: v.ticket ?? '',
    draw: v.draw === undefined ? false : { rank: t.count(v.draw.rank), value: v.draw.value, check: v.draw.check },
    schedule:
      s === undefined
        ? false
        : {
            prequeueAt: t.scheduleTime(s.prequeueAt),
            opensAt: t.scheduleTime(s.opensAt),
            closesAt: s.closesAt === null ? '' : t.scheduleTime(s.closesAt),
            countdown: t.countdown(countdown),
            countdownSeconds: String(countdown),
          },
    t: textsView(t, v),
  }
}

/** The template's output for a page: ASCII HTML, every variable escaped. */
export function renderTemplate(tpl: CompiledTemplate, view: Record<string, unknown>): string {
  return writer.renderTokens(tpl.tokens as string[][], new Mustache.Context(view), undefined, tpl.source, RENDER)
}

/** A queue page with a room's template for its body: the edge's shell around it. */
export function templatedPage(tpl: CompiledTemplate, v: VisitorStatus, text: RoomText, locale: Locale): string {
  const t = texts(locale)
  const shell = pageShell(v, locale, stateWords(v, text, t, true).headline, tpl.sheet?.html)
  const body = renderTemplate(tpl, templateView(v as TemplateStatus, text, locale))
  return `${shell.head}${finalState(v) ? '' : refreshAfter(v)}${shell.open}${v.nextPollSeconds}">\n${body}\n${shell.close}`
}

// --- previews -------------------------------------------------------------------------------------

const SAMPLE_SCHEDULE = { prequeueAt: '2026-12-01T09:50:00+01:00', opensAt: '2026-12-01T10:00:00+01:00', closesAt: null }

/** A made-up visitor in a state, for a preview: a busy line of 5,678 with the visitor at 1,234. */
export function sampleStatus(state: TemplateState, room: Pick<RoomSettings, 'id' | 'refreshSeconds' | 'schedule'>): TemplateStatus {
  const placedStates: TemplateState[] = ['queued', 'paused', 'recovering', 'sold_out', 'all_held']
  const placed = placedStates.includes(state)
  const base: TemplateStatus = {
    room: room.id,
    state,
    position: placed ? 1234 : null,
    ahead: placed ? 1233 : null,
    waiting: placed ? 5678 : state === 'prequeue' ? 4321 : null,
    etaSeconds: state === 'queued' ? 1260 : null,
    etaRange: state === 'queued' ? [900, 1800] : null,
    refreshSeconds: room.refreshSeconds,
    nextPollSeconds: room.refreshSeconds,
  }
  if (state === 'scheduled' || state === 'prequeue') {
    const s = room.schedule ?? SAMPLE_SCHEDULE
    base.schedule = {
      prequeueAt: s.prequeueAt,
      opensAt: s.opensAt,
      closesAt: s.closesAt ?? null,
      prequeueInSeconds: state === 'scheduled' ? 3600 : 0,
      opensInSeconds: state === 'scheduled' ? 4200 : 600,
    }
  }
  if (state === 'prequeue' || (state === 'queued' && room.schedule !== null)) base.ticket = 'aB3dE5fG7hJ9kL1m'
  if (state === 'queued' && room.schedule !== null)
    base.draw = { rank: 42, value: '3f9a0c1de2b4a6c8e0f1a2b3c4d5e6f7', check: `/_anteroom/draw?room=${room.id}` }
  return base
}

/**
 * A template's page with a made-up visitor in a state (sampleStatus), for the admin UI's frames: in
 * the shell without its script and refresh (admin/templates.ts serves it; the built-in page's previews
 * are pages.ts's own queuePage).
 */
export function previewPage(
  tpl: CompiledTemplate,
  state: TemplateState,
  room: Pick<RoomSettings, 'id' | 'refreshSeconds' | 'schedule'> & RoomText,
  locale: Locale,
): string {
  const v = sampleStatus(state, room)
  const t = texts(locale)
  const headline = v.state === 'challenge' ? t.html('challenge.headline') : stateWords(v as VisitorStatus, room, t, true).headline
  const shell = pageShell(v, locale, headline, tpl.sheet?.html, false)
  return `${shell.head}${shell.open}${v.nextPollSeconds}">\n${renderTemplate(tpl, templateView(v, room, locale))}\n${shell.close}`
}

/** The page's policy for a template with a style sheet: the edge's two files, the sheet, and its origin's images and fonts. */
export function templatePolicy(cssSource: string, jsSource: string | undefined, sheet: { csp: string; origin: string }): string {
  const script = jsSource === undefined ? '' : `script-src ${jsSource}; connect-src 'self'; `
  return `default-src 'none'; style-src ${cssSource} ${sheet.csp}; img-src ${sheet.origin}; font-src ${sheet.origin}; ${script}base-uri 'none'; form-action 'self'`
}

/** What a template is saved as, checked: for the admin API (admin/templates.ts). */
export function checkedTemplate(
  input: { name: unknown; source: unknown; stylesheet?: unknown },
  styleOrigins: readonly string[],
): PageTemplate {
  return checkTemplate(input, { styleOrigins, texts: TEMPLATE_TEXT_KEYS })
}
