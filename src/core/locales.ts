// The languages of the visitor's pages, and how one is chosen for a request: `?lang=` (a visitor's own
// choice, which the edge keeps in a cookie), then that cookie, then the browser's Accept-Language
// (by q-value, a regional tag falling back to its language: de-AT → de), then the room's `locale`
// setting, then English. Pure functions: the edge (src/http/i18n.ts) caches what it works out.
// The catalogues of words are src/http/locales/<tag>.ts, one a language.

/** Each language: its name in itself (the admin form's choice), and its writing direction. */
export const LOCALES = {
  en: { name: 'English', dir: 'ltr' },
  de: { name: 'Deutsch', dir: 'ltr' },
  fr: { name: 'Français', dir: 'ltr' },
  es: { name: 'Español', dir: 'ltr' },
  it: { name: 'Italiano', dir: 'ltr' },
  nl: { name: 'Nederlands', dir: 'ltr' },
  'pt-BR': { name: 'Português (Brasil)', dir: 'ltr' },
  pl: { name: 'Polski', dir: 'ltr' },
  ja: { name: '日本語', dir: 'ltr' },
  ar: { name: 'العربية', dir: 'rtl' },
} as const satisfies Record<string, { name: string; dir: 'ltr' | 'rtl' }>

export type Locale = keyof typeof LOCALES
export const LOCALE_TAGS = Object.keys(LOCALES) as Locale[]
export const DEFAULT_LOCALE: Locale = 'en'

/** The cookie that keeps a visitor's `?lang=` choice (src/http/i18n.ts sets it). */
export const LANG_COOKIE = 'anteroom_lang'
/** The query parameter a visitor (or a link) chooses the language with. */
export const LANG_PARAM = 'lang'

/** A language tag as BCP 47 spells it: letters and digits in parts of 1-8, joined by '-' or '_'. */
const TAG = /^[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*$/

const byLowerTag = new Map<string, Locale>(LOCALE_TAGS.map((tag) => [tag.toLowerCase(), tag]))
/** The first locale of each language: pt (or pt-PT) → pt-BR, the one Portuguese there is. */
const byLanguage = new Map<string, Locale>()
for (const tag of LOCALE_TAGS) {
  const language = tag.split('-')[0]?.toLowerCase() as string
  if (!byLanguage.has(language)) byLanguage.set(language, tag)
}

/**
 * The locale for a tag as a visitor or a browser writes it: the same tag in any case (pt-br → pt-BR),
 * else the language's (de-AT → de, pt → pt-BR); undefined for a tag we have no language of, or one
 * that is not a language tag at all.
 */
export function matchLocale(tag: string): Locale | undefined {
  if (tag.length > 64 || !TAG.test(tag)) return undefined
  const lower = tag.toLowerCase().replace(/_/g, '-')
  return byLowerTag.get(lower) ?? byLanguage.get(lower.split('-')[0] as string)
}

/**
 * An Accept-Language header's tags, most wanted first: by q-value (1 when not given), in the order
 * written among equal ones; q=0 ("not this one"), `*` and malformed entries are left out.
 */
export function acceptedTags(header: string): string[] {
  const entries: { tag: string; q: number; at: number }[] = []
  const parts = header.split(',')
  for (let at = 0; at < parts.length && at < 32; at++) {
    const [rawTag, ...params] = (parts[at] as string).split(';')
    const tag = (rawTag as string).trim()
    if (tag === '' || tag === '*' || !TAG.test(tag)) continue
    let q = 1
    for (const p of params) {
      const m = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/i.exec(p)
      if (m) q = Number(m[1])
    }
    if (q > 0 && q <= 1) entries.push({ tag, q, at })
  }
  return entries.sort((a, b) => b.q - a.q || a.at - b.at).map((e) => e.tag)
}

/** The first of the browser's languages that we have (each tag falling back to its language), if any. */
export function localeFromAcceptLanguage(header: string): Locale | undefined {
  for (const tag of acceptedTags(header)) {
    const locale = matchLocale(tag)
    if (locale !== undefined) return locale
  }
  return undefined
}

export function isLocale(tag: unknown): tag is Locale {
  return typeof tag === 'string' && Object.hasOwn(LOCALES, tag)
}

export function localeDir(locale: Locale): 'ltr' | 'rtl' {
  return LOCALES[locale].dir
}

/** Where a request's language came from. */
export type LocaleSource = 'query' | 'cookie' | 'header' | 'room' | 'default'

/**
 * The language of a page: `?lang=` > the cookie that kept an earlier `?lang=` > Accept-Language >
 * the room's locale > English. Values that name no language of ours are passed over.
 */
export function chooseLocale(
  o: {
    query?: string | undefined
    cookie?: string | undefined
    acceptLanguage?: string | undefined
    room?: string | undefined
  },
  /** How an Accept-Language value is read (the edge remembers what it read). */
  fromAcceptLanguage: (header: string) => Locale | undefined = localeFromAcceptLanguage,
): { locale: Locale; source: LocaleSource } {
  const fromQuery = o.query === undefined ? undefined : matchLocale(o.query)
  if (fromQuery !== undefined) return { locale: fromQuery, source: 'query' }
  const fromCookie = o.cookie === undefined ? undefined : matchLocale(o.cookie)
  if (fromCookie !== undefined) return { locale: fromCookie, source: 'cookie' }
  const fromHeader = o.acceptLanguage === undefined || o.acceptLanguage === '' ? undefined : fromAcceptLanguage(o.acceptLanguage)
  if (fromHeader !== undefined) return { locale: fromHeader, source: 'header' }
  if (isLocale(o.room)) return { locale: o.room, source: 'room' }
  return { locale: DEFAULT_LOCALE, source: 'default' }
}
