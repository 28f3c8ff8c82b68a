// The visitor's pages in their language: which language a request gets (core/locales.ts; what a
// browser's Accept-Language says is remembered, as browsers send few distinct ones), and the words of
// the catalogues (http/locales/) with their placeholders filled, as text or as ASCII HTML, with
// numbers, waits and times written by Intl for the language. Each text is split into its pieces
// once per language, so a page fills them by concatenation.

import { BoundedMap } from '../core/bounded-map.js'
import { chooseLocale, isLocale, LANG_COOKIE, LOCALE_TAGS, type Locale, localeFromAcceptLanguage } from '../core/locales.js'
import { readCookie } from './cookies.js'
import { escapeHtml, flat, grouped } from './html.js'
import { isPlural, type PluralCategory, type Text } from './locales/catalogue.js'
import { CATALOGUES, type MessageKey } from './locales/index.js'

// --- which language ----------------------------------------------------------------------------

/** Accept-Language values already read (null: none of our languages), up to ACCEPT_REMEMBERED. */
const ACCEPT_REMEMBERED = 512
const fromHeaders = new BoundedMap<string, Locale | null>(ACCEPT_REMEMBERED)

function headerLocale(header: string): Locale | undefined {
  let found = fromHeaders.get(header)
  if (found === undefined) {
    found = localeFromAcceptLanguage(header) ?? null
    if (header.length <= 256) {
      fromHeaders.set(header, found)
    }
  }
  return found ?? undefined
}

/** A page's language, and the choice to keep in LANG_COOKIE when `?lang=` made one the cookie does not hold yet. */
export interface PageLocale {
  locale: Locale
  keep: Locale | undefined
}

/** A page's language with nothing to keep, one object a language: most pages' answer, made once. */
const KEEP_NOTHING = new Map<Locale, PageLocale>(LOCALE_TAGS.map((locale) => [locale, Object.freeze({ locale, keep: undefined })]))

/** `?lang=` > the LANG_COOKIE an earlier `?lang=` set > Accept-Language > the room's `locale` > English. */
export function pageLocale(
  query: string | undefined,
  cookieHeader: string | null,
  acceptLanguage: string | undefined,
  room: string,
): PageLocale {
  // Most pages: no ?lang= and no cookie of one, so the browser's languages or the room's (core/locales.ts
  // chooseLocale, the same order without its objects).
  if (query === undefined && (cookieHeader === null || !cookieHeader.includes(LANG_COOKIE))) {
    const locale =
      (acceptLanguage === undefined || acceptLanguage === '' ? undefined : headerLocale(acceptLanguage)) ?? (isLocale(room) ? room : 'en')
    return KEEP_NOTHING.get(locale) as PageLocale
  }
  const cookie = cookieHeader === null ? undefined : readCookie(cookieHeader, LANG_COOKIE)
  const { locale, source } = chooseLocale({ query, cookie, acceptLanguage, room }, headerLocale)
  return { locale, keep: source === 'query' && locale !== cookie ? locale : undefined }
}

// --- the words -----------------------------------------------------------------------------------

/** One form of a text split at its placeholders: literal, name, literal, ... (as text and as HTML). */
interface Form {
  text: string[]
  html: string[]
}
type Forms = { [C in PluralCategory]?: Form } & { other: Form }

/**
 * One form of a text: its pieces as text and as HTML. The HTML pieces are made one-byte strings
 * (flat): escaping a two-byte text can leave its ASCII result two bytes a character, and one such
 * piece in a page makes the whole page two-byte, re-encoded for every answer (html.ts).
 */
function formOf(text: string): Form {
  const text_ = text.split(/\{(\w+)\}/)
  return { text: text_, html: text_.map((piece, i) => (i % 2 === 0 ? flat(escapeHtml(piece)) : piece)) }
}

function formsOf(text: Text): Forms {
  if (!isPlural(text)) return { other: formOf(text) }
  const out: Partial<Forms> = {}
  for (const [category, form] of Object.entries(text)) out[category as PluralCategory] = formOf(form as string)
  return out as Forms
}

/** Values for placeholders: text for a text, HTML for HTML. */
export type Vars = Readonly<Record<string, string>>
const NONE: Vars = {}

/** A schedule's time as written: date, hours and minutes, and its zone (Z or ±hh:mm). */
const ISO_PARTS = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

/** Counts whose plural category a language keeps (minutes of a wait, seconds of a refresh, a rank). */
const PLURALS_KEPT = 10_000
/** Waits (and ranges) a language keeps as written; past this many, others are written for each page. */
const WAITS_KEPT = 4096

/**
 * A text kept by its key, made (and flattened: one piece in a page, html.ts flat) on first use. Once
 * WAITS_KEPT are kept, another is made for its page alone and not flattened (a JSON round trip that
 * only pays when the text is kept): never cleared, so a line whose waits span more minutes than that
 * (the bench's: one a minute, 20,000 in line) does not make and flatten every page's wait again.
 */
function remembered(kept: Map<number, string>, key: number, make: () => string): string {
  const text = kept.get(key)
  if (text !== undefined) return text
  if (kept.size >= WAITS_KEPT) return make()
  const made = flat(make())
  kept.set(key, made)
  return made
}

/** One language's words and formats. */
export class Texts {
  readonly dir: 'ltr' | 'rtl'
  private readonly forms = new Map<MessageKey, Forms>()
  private readonly numbers: Intl.NumberFormat
  private readonly plurals: Intl.PluralRules
  private readonly dates: Intl.DateTimeFormat
  private readonly times: Intl.DateTimeFormat
  /** Whether Intl writes this language's counts in ASCII (no character references needed). */
  private readonly asciiCounts: boolean
  /** The plural category of each whole count under PLURALS_KEPT, as Intl.PluralRules chose it once (select costs a microsecond). */
  private readonly categories: (PluralCategory | undefined)[] = []
  /** Waits and ranges as a page writes them, by minutes: made once, flat, so a page holds one piece for each. */
  private readonly etaHtml = new Map<number, string>()
  private readonly rangeHtml = new Map<number, string>()

  constructor(readonly locale: Locale) {
    this.dir = locale === 'ar' ? 'rtl' : 'ltr'
    for (const [key, text] of Object.entries(CATALOGUES[locale])) this.forms.set(key as MessageKey, formsOf(text as Text))
    this.numbers = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 })
    this.plurals = new Intl.PluralRules(locale)
    this.dates = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' })
    this.times = new Intl.DateTimeFormat(locale, { timeStyle: 'short', timeZone: 'UTC' })
    this.asciiCounts = /^[\x20-\x7e]*$/.test(this.numbers.format(1234567))
  }

  /** A count as the language writes it ("1,234", "1.234", "1 234"). */
  count(n: number): string {
    return this.locale === 'en' ? grouped(n) : this.numbers.format(n)
  }

  /** The same as HTML, one byte a character (formOf): character references for what is not ASCII. */
  countHtml(n: number): string {
    return this.asciiCounts ? this.count(n) : flat(escapeHtml(this.count(n)))
  }

  private form(key: MessageKey, n: number | undefined): Form {
    const forms = this.forms.get(key) as Forms
    if (n === undefined) return forms.other
    const kept = n >= 0 && n < PLURALS_KEPT && Number.isInteger(n)
    let category = kept ? this.categories[n] : undefined
    if (category === undefined) {
      category = this.plurals.select(n) as PluralCategory
      if (kept) this.categories[n] = category
    }
    return forms[category] ?? forms.other
  }

  private fill(pieces: string[], vars: Vars, n: string): string {
    let out = pieces[0] as string
    for (let i = 1; i < pieces.length; i += 2) {
      const name = pieces[i] as string
      out += (name === 'n' ? n : (vars[name] ?? '')) + (pieces[i + 1] as string)
    }
    return out
  }

  /** A text with its placeholders filled (`n`: the count a plural depends on, written as {n}). */
  say(key: MessageKey, vars: Vars = NONE, n?: number): string {
    return this.fill(this.form(key, n).text, vars, n === undefined ? '' : this.count(n))
  }

  /** The same as ASCII HTML: `vars` must be HTML already; {n} is escaped here. */
  html(key: MessageKey, vars: Vars = NONE, n?: number): string {
    const count = n === undefined ? '' : this.countHtml(n)
    return this.fill(this.form(key, n).html, vars, count)
  }

  private phrase(key: MessageKey, html: boolean, vars: Vars = NONE, n?: number): string {
    return html ? this.html(key, vars, n) : this.say(key, vars, n)
  }

  /** Whole minutes, short: "45 min", "2 h", "1 h 10 min". */
  minutes(m: number, html = false): string {
    if (m < 60) return this.phrase('dur.min', html, NONE, m)
    if (m % 60 === 0) return this.phrase('dur.h', html, NONE, m / 60)
    return this.hoursMinutes(m, html)
  }

  private hoursMinutes(m: number, html: boolean): string {
    const h = Math.floor(m / 60)
    const vars = html ? { h: this.countHtml(h), m: this.countHtml(m % 60) } : { h: this.count(h), m: this.count(m % 60) }
    return this.phrase('dur.hMin', html, vars)
  }

  /** The estimated wait: "about 5 minutes", "about 2 h 10 min" (the page script writes the same: POLL_SCRIPT). */
  eta(seconds: number | null, html = false): string {
    if (seconds === null) return this.phrase('eta.unknown', html)
    if (seconds < 60) return this.phrase('eta.underMinute', html)
    const minutes = Math.round(seconds / 60)
    if (!html) return this.etaOf(minutes, false)
    return remembered(this.etaHtml, minutes, () => this.etaOf(minutes, true))
  }

  private etaOf(minutes: number, html: boolean): string {
    if (minutes < 60) return this.phrase('eta.minutes', html, NONE, minutes)
    return this.phrase('eta.hours', html, { duration: this.hoursMinutes(minutes, html) })
  }

  /** The range around the estimate, and that it is one: "Between 4 and 7 minutes — an estimate"; '' without one. */
  etaRange(range: readonly [number, number] | null, html = false): string {
    if (range === null) return ''
    const low = Math.round(range[0] / 60)
    const high = Math.round(range[1] / 60)
    if (!html) return this.rangeOf(low, high, false)
    return remembered(this.rangeHtml, low * 1_000_000 + high, () => this.rangeOf(low, high, true))
  }

  private rangeOf(low: number, high: number, html: boolean): string {
    if (high < 1) return this.phrase('range.underMinute', html)
    if (low === high) return this.phrase('range.same', html)
    if (low < 1)
      return this.phrase('range.upTo', html, { high: high < 60 ? this.phrase('dur.minutes', html, NONE, high) : this.minutes(high, html) })
    if (high < 60) return this.phrase('range.minutes', html, { low: html ? this.countHtml(low) : this.count(low) }, high)
    return this.phrase('range.between', html, { low: this.minutes(low, html), high: this.minutes(high, html) })
  }

  /**
   * A schedule's ISO time as written, in its own zone, as text: the date and the time by
   * Intl.DateTimeFormat, and the zone ("10:00 AM on December 1, 2026 (UTC+01:00)").
   */
  scheduleTime(iso: string): string {
    const m = ISO_PARTS.exec(iso)
    if (m === null) return iso
    // The wall time as written, read as UTC and written in UTC: the zone is named beside it.
    const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5])))
    const zone = `UTC${m[6] === 'Z' ? '' : m[6]}`
    return this.say('schedule.at', { date: this.dates.format(at), time: this.times.format(at), zone })
  }

  /** A countdown: "01:00:00", "2 d 03:00:00" (digits as a clock shows them, in every language). */
  countdown(seconds: number): string {
    const two = (n: number) => String(n).padStart(2, '0')
    const days = Math.floor(seconds / 86_400)
    const clock = `${two(Math.floor((seconds % 86_400) / 3600))}:${two(Math.floor((seconds % 3600) / 60))}:${two(seconds % 60)}`
    return days > 0 ? `${this.say('countdown.days', NONE, days)} ${clock}` : clock
  }
}

const byLocale = new Map<Locale, Texts>()

/** A language's words and formats, made once. */
export function texts(locale: Locale): Texts {
  let t = byLocale.get(locale)
  if (t === undefined) byLocale.set(locale, (t = new Texts(locale)))
  return t
}

/** The texts the page script writes as it polls (the wait, its range, a countdown's days): handed to it as data. */
export const LIVE_KEYS = [
  'eta.unknown',
  'eta.underMinute',
  'eta.minutes',
  'eta.hours',
  'range.underMinute',
  'range.same',
  'range.upTo',
  'range.minutes',
  'range.between',
  'dur.minutes',
  'dur.min',
  'dur.h',
  'dur.hMin',
  'countdown.days',
] as const satisfies readonly MessageKey[]

export function liveTexts(locale: Locale): Record<string, Text> {
  const catalogue = CATALOGUES[locale]
  return Object.fromEntries(LIVE_KEYS.map((key) => [key, catalogue[key]]))
}
