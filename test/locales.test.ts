// The languages of the visitor's pages: every catalogue has every key of the English one with the same
// placeholders and the plural forms its language needs (Intl.PluralRules), English matches the error
// registry, a request's language is chosen in the documented order, and numbers, waits and times are
// written by Intl in each language.
import { describe, expect, it } from 'vitest'
import { ERRORS, type ErrorCode } from '../src/core/errors.js'
import {
  acceptedTags,
  chooseLocale,
  LOCALE_TAGS,
  LOCALES,
  type Locale,
  localeFromAcceptLanguage,
  matchLocale,
} from '../src/core/locales.js'
import { escapeHtml } from '../src/http/html.js'
import { pageLocale, texts } from '../src/http/i18n.js'
import { isPlural, type Text } from '../src/http/locales/catalogue.js'
import { en } from '../src/http/locales/en.js'
import { CATALOGUES } from '../src/http/locales/index.js'
import { queuePage } from '../src/http/pages.js'

const placeholders = (text: string) => new Set([...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string))

/** What is wrong with a catalogue against the English one: missing or extra keys, placeholders, plural forms. */
function catalogueProblems(locale: Locale, catalogue: Record<string, Text>): string[] {
  const problems: string[] = []
  const categories = new Intl.PluralRules(locale).resolvedOptions().pluralCategories as string[]
  for (const key of Object.keys(en)) if (!Object.hasOwn(catalogue, key)) problems.push(`${key}: missing`)
  for (const key of Object.keys(catalogue)) if (!Object.hasOwn(en, key)) problems.push(`${key}: not in English`)
  for (const [key, source] of Object.entries(en) as [string, Text][]) {
    const text = catalogue[key]
    if (text === undefined) continue
    if (isPlural(source) !== isPlural(text)) {
      problems.push(`${key}: ${isPlural(source) ? 'must be' : 'must not be'} a plural`)
      continue
    }
    const wanted = new Set(isPlural(source) ? Object.values(source).flatMap((t) => [...placeholders(t as string)]) : placeholders(source))
    const forms = isPlural(text) ? Object.entries(text) : [['other', text]]
    for (const [form, t] of forms) {
      const got = placeholders(t as string)
      for (const p of got) if (!wanted.has(p)) problems.push(`${key}.${form}: {${p}} is not a placeholder of the English`)
      // A form may leave the count out ("ثانيتين", two seconds); every other placeholder must be there.
      for (const p of wanted) if (p !== 'n' && !got.has(p)) problems.push(`${key}.${form}: {${p}} is missing`)
    }
    if (isPlural(text)) {
      for (const c of categories) if (!Object.hasOwn(text, c)) problems.push(`${key}: no "${c}" form`)
      for (const c of Object.keys(text)) if (!categories.includes(c)) problems.push(`${key}: "${c}" is not a plural form of ${locale}`)
    }
  }
  return problems
}

describe('the catalogues', () => {
  it('are there for at least ten languages, one of them right to left', () => {
    expect(LOCALE_TAGS.length).toBeGreaterThanOrEqual(10)
    expect(LOCALE_TAGS).toEqual(expect.arrayContaining(['en', 'de', 'fr', 'es', 'it', 'nl', 'pt-BR', 'pl', 'ja', 'ar']))
    expect(Object.keys(CATALOGUES).sort()).toEqual([...LOCALE_TAGS].sort())
    expect(LOCALE_TAGS.filter((tag) => LOCALES[tag].dir === 'rtl')).toEqual(['ar'])
  })

  for (const locale of LOCALE_TAGS) {
    it(`${locale}: every English key, the same placeholders, its language's plural forms`, () => {
      expect(catalogueProblems(locale, CATALOGUES[locale] as unknown as Record<string, Text>)).toEqual([])
    })
  }

  it('the check finds a missing key, a stray placeholder, a missing plural form and a key English does not have', () => {
    const broken: Record<string, Text> = { ...(CATALOGUES.pl as unknown as Record<string, Text>) }
    delete broken['numbers.eta']
    broken['paused.lead'] = 'Kolejka stoi {seconds}'
    broken['eta.minutes'] = { one: 'około {n} minuty', other: 'około {n} minuty' }
    broken['range.minutes'] = { one: 'Od {n}', few: 'Od {low} do {n}', many: 'Od {low} do {n}', other: 'Od {low} do {n}' }
    broken['extra.key'] = 'x'
    expect(catalogueProblems('pl', broken)).toEqual([
      'numbers.eta: missing',
      'extra.key: not in English',
      'paused.lead.other: {seconds} is not a placeholder of the English',
      'eta.minutes: no "few" form',
      'eta.minutes: no "many" form',
      'range.minutes.one: {low} is missing',
    ])
  })

  it('English error pages say what the error registry says', () => {
    for (const key of Object.keys(en).filter((k) => k.startsWith('error.ERR_'))) {
      const [, code, part] = key.split('.') as [string, ErrorCode, 'title' | 'detail']
      expect(ERRORS[code], key).toBeDefined()
      expect(en[key as keyof typeof en], key).toBe(part === 'title' ? ERRORS[code].title : ERRORS[code].visitor)
    }
  })

  it('the access code form and the lane line are in the page’s language', () => {
    expect(Object.keys(en).filter((k) => k.startsWith('access.') || k.startsWith('lane.'))).toEqual([
      'access.heading',
      'access.label',
      'access.hint',
      'access.button',
      'lane.priority',
      'lane.separate',
    ])
    const v = {
      room: 'r',
      state: 'queued' as const,
      position: 3,
      ahead: 2,
      waiting: 9,
      etaSeconds: 60,
      etaRange: null,
      refreshSeconds: 20,
      nextPollSeconds: 5,
    }
    const room = { title: 'T', message: 'M', accessCodes: 'on' }
    expect(queuePage(v, room, 'de')).toContain('<h2 id="access-heading">Haben Sie einen Zugangscode?</h2>')
    expect(queuePage(v, room, 'en')).toContain('<h2 id="access-heading">Have an access code?</h2>')
    expect(queuePage({ ...v, lane: 'priority' } as typeof v, room, 'ja')).toContain('&#20778;&#20808;&#21015;') // 優先列
  })

  it('every text a visitor sees in another language is written in it: none is left in English', () => {
    for (const locale of LOCALE_TAGS.filter((l) => l !== 'en')) {
      const same = (Object.keys(en) as (keyof typeof en)[]).filter((key) => {
        const words = (t: Text) => (isPlural(t) ? Object.values(t).join(' | ') : t)
        const [a, b] = [words(en[key]), words(CATALOGUES[locale][key])]
        // Abbreviations and placeholders alone may read the same ("{n} min"; "Error {status}" in Spanish).
        return a === b && /[A-Za-z]{4,}/.test(a.replace(/\{\w+\}/g, '')) && key !== 'error.status'
      })
      expect(same, locale).toEqual([])
    }
  })
})

describe('choosing the language', () => {
  it('reads Accept-Language by q-value, in written order among equals, without q=0 or *', () => {
    expect(acceptedTags('fr;q=0.5, de-AT, en;q=0.9, ja;q=0, *;q=0.1, it')).toEqual(['de-AT', 'it', 'en', 'fr'])
    expect(acceptedTags('')).toEqual([])
    expect(acceptedTags('de;q=abc, nl')).toEqual(['de', 'nl'])
  })

  it('matches a tag, in any case, or its language: de-AT → de, pt → pt-BR; nothing for a language we lack', () => {
    expect(matchLocale('de-AT')).toBe('de')
    expect(matchLocale('PT-br')).toBe('pt-BR')
    expect(matchLocale('pt')).toBe('pt-BR')
    expect(matchLocale('pt-PT')).toBe('pt-BR')
    expect(matchLocale('ar-EG')).toBe('ar')
    expect(matchLocale('en_GB')).toBe('en')
    expect(matchLocale('sv')).toBeUndefined()
    expect(matchLocale('de;x')).toBeUndefined()
    expect(matchLocale('<script>')).toBeUndefined()
    expect(localeFromAcceptLanguage('sv-SE, sv;q=0.9, nl-BE;q=0.8, en;q=0.5')).toBe('nl')
    expect(localeFromAcceptLanguage('sv, fi')).toBeUndefined()
  })

  it('?lang= > its cookie > Accept-Language > the room > English, each passed over when it names no language of ours', () => {
    expect(chooseLocale({ query: 'ja', cookie: 'de', acceptLanguage: 'fr', room: 'it' })).toEqual({ locale: 'ja', source: 'query' })
    expect(chooseLocale({ query: 'zz', cookie: 'de', acceptLanguage: 'fr', room: 'it' })).toEqual({ locale: 'de', source: 'cookie' })
    expect(chooseLocale({ cookie: 'zz', acceptLanguage: 'fr-CA', room: 'it' })).toEqual({ locale: 'fr', source: 'header' })
    expect(chooseLocale({ acceptLanguage: 'sv', room: 'it' })).toEqual({ locale: 'it', source: 'room' })
    expect(chooseLocale({ room: 'xx' })).toEqual({ locale: 'en', source: 'default' })
  })

  it('keeps a ?lang= choice in the cookie only when it changes it', () => {
    expect(pageLocale('ar', null, 'de', 'en')).toEqual({ locale: 'ar', keep: 'ar' })
    expect(pageLocale('ar', 'anteroom_lang=ar', 'de', 'en')).toEqual({ locale: 'ar', keep: undefined })
    expect(pageLocale('ja', 'anteroom_q_sale=x; anteroom_lang=ar', 'de', 'en')).toEqual({ locale: 'ja', keep: 'ja' })
    expect(pageLocale(undefined, 'anteroom_lang=ar', 'de', 'en')).toEqual({ locale: 'ar', keep: undefined })
    expect(pageLocale(undefined, null, 'de-CH', 'en')).toEqual({ locale: 'de', keep: undefined })
    expect(pageLocale('nope', null, undefined, 'pl')).toEqual({ locale: 'pl', keep: undefined })
  })
})

describe('numbers, waits and times by Intl', () => {
  it('writes counts as each language does', () => {
    expect(texts('en').count(1234567)).toBe('1,234,567')
    expect(texts('de').count(1234567)).toBe('1.234.567')
    expect(texts('fr').count(1234)).toBe('1\u202f234')
    expect(texts('pl').count(1234)).toBe('1234')
    expect(texts('pl').count(12345)).toBe('12\u00a0345')
    expect(texts('pt-BR').count(1234)).toBe('1.234')
    for (const locale of LOCALE_TAGS) expect(texts(locale).count(98765), locale).toBe(new Intl.NumberFormat(locale).format(98765))
  })

  it('English waits read as they always did', () => {
    const t = texts('en')
    expect([null, 30, 60, 90, 119, 3540, 3600, 3661, 76260].map((s) => t.eta(s))).toEqual([
      'unknown for now',
      'under a minute',
      'about 1 minute',
      'about 2 minutes',
      'about 2 minutes',
      'about 59 minutes',
      'about 1 h 0 min',
      'about 1 h 1 min',
      'about 21 h 11 min',
    ])
    expect(t.etaRange(null)).toBe('')
    expect(t.etaRange([5, 20])).toBe('Under a minute — an estimate')
    expect(t.etaRange([240, 240])).toBe('An estimate: it follows how fast the line moves')
    expect(t.etaRange([10, 60])).toBe('Up to 1 minute — an estimate')
    expect(t.etaRange([10, 3900])).toBe('Up to 1 h 5 min — an estimate')
    expect(t.etaRange([240, 420])).toBe('Between 4 and 7 minutes — an estimate')
    expect(t.etaRange([2700, 7200])).toBe('Between 45 min and 2 h — an estimate')
    expect(t.etaRange(null, true)).toBe('')
    expect(t.etaRange([240, 420], true)).toBe('Between 4 and 7 minutes &#8212; an estimate')
  })

  it('writes a page’s wait right however many different waits a line has (past the ones a language keeps)', () => {
    const t = texts('de')
    // 20,000 minutes of waits (a line of 20,000 at one a minute), then the first ones again: each as
    // the uncached text says it, whether kept or not.
    const minutes = [...Array.from({ length: 20_000 }, (_, i) => i + 1), 1, 2, 4095, 4096, 4097, 19_999]
    for (const m of minutes) {
      expect(t.eta(m * 60, true)).toBe(escapeHtml(t.eta(m * 60)))
      expect(t.etaRange([m * 60, m * 120], true)).toBe(escapeHtml(t.etaRange([m * 60, m * 120])))
    }
    expect(t.eta(19_999 * 60, true)).toBe('etwa 333 Std. 19 Min.')
  })
  it('chooses each language’s plural forms', () => {
    expect([1, 2, 5, 22, 25].map((n) => texts('pl').eta(n * 60))).toEqual([
      'około 1 minuty',
      'około 2 minut',
      'około 5 minut',
      'około 22 minut',
      'około 25 minut',
    ])
    expect([1, 2, 3, 11].map((n) => texts('ar').eta(n * 60))).toEqual([
      'حوالي دقيقة واحدة',
      'حوالي دقيقتين',
      'حوالي 3 دقائق',
      'حوالي 11 دقيقة',
    ])
    expect(texts('de').say('page.refreshes', {}, 20)).toMatch(/^Diese Seite aktualisiert sich alle 20 Sekunden/)
    expect(texts('ar').say('page.refreshes', {}, 2)).toMatch(/كل ثانيتين/)
    expect(texts('ja').eta(1260)).toBe('約21分')
    expect(texts('de').etaRange([2700, 7200])).toBe('Zwischen 45 Min. und 2 Std. – eine Schätzung')
  })

  it('writes a schedule’s time as written, in its own zone, in the language', () => {
    const at = '2027-01-15T10:30:00+01:00'
    // ICU writes a space or a narrow no-break space before AM, by version.
    expect(texts('en').scheduleTime(at)).toMatch(/^10:30[ \u202f]AM on January 15, 2027 \(UTC\+01:00\)$/)
    expect(texts('de').scheduleTime(at)).toBe('15. Januar 2027 um 10:30 Uhr (UTC+01:00)')
    expect(texts('ja').scheduleTime(at)).toBe('2027年1月15日 10:30（UTC+01:00）')
    expect(texts('fr').scheduleTime('2027-01-15T23:05Z')).toBe('15 janvier 2027 à 23:05 (UTC)')
    expect(texts('en').scheduleTime('not a time')).toBe('not a time')
  })

  it('counts down with a day in the language', () => {
    expect(texts('en').countdown(3600)).toBe('01:00:00')
    expect(texts('de').countdown(2 * 86_400 + 61)).toBe('2 Tage 00:01:01')
    expect(texts('ar').countdown(2 * 86_400)).toBe('يومان 00:00:00')
  })
})
