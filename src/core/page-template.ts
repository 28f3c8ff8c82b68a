// A room's own queue page body: a mustache template (logic-less; every variable HTML-escaped), its
// documented variables, and the check every template passes when it is saved (and again when an
// edge loads it): mustache syntax, only documented variables, no raw HTML from variables, no script,
// no inline style or event handler, no head elements, a size limit, and a style sheet only from an
// allowed origin. The edge renders it inside its own shell (src/http/pages.ts pageShell), so a
// template cannot remove the page's Content-Security-Policy or add a script.
//
// Why the markup rules: mustache knows nothing of HTML, and a section that renders nothing could join
// the text around it into markup nobody wrote (`<scr{{#x}}{{/x}}ipt>`). So every `<` in the source
// must begin a tag or a comment, a tag may hold variables only inside quoted attribute values (never
// a section), and a comment holds no mustache at all: then the tags of any rendering are tags of the
// source, whole, and those are checked here.
import Mustache from 'mustache'
import { AnteroomError } from './errors.js'

export const TEMPLATE_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/
/** The longest template source, in characters. */
export const TEMPLATE_MAX_CHARS = 32_768
export const STYLESHEET_MAX_CHARS = 2048

/** A template as stored: its name, its mustache source and its own style sheet's URL (or none). */
export interface PageTemplate {
  name: string
  source: string
  stylesheet: string | null
}

/** The states a template renders: the visitor's (core/visit.ts) but admitted, and the proof-of-work challenge. */
export const TEMPLATE_STATES = [
  'queued',
  'prequeue',
  'scheduled',
  'paused',
  'closed',
  'sold_out',
  'challenge',
  'ended',
  'busy',
  'recovering',
  'all_held',
] as const
export type TemplateState = (typeof TEMPLATE_STATES)[number]

/** Each state's flag, as a template reads it (`{{#soldOut}}…{{/soldOut}}`). */
export const STATE_FLAGS: Readonly<Record<TemplateState, string>> = {
  queued: 'queued',
  prequeue: 'prequeue',
  scheduled: 'scheduled',
  paused: 'paused',
  closed: 'closed',
  sold_out: 'soldOut',
  challenge: 'challenge',
  ended: 'ended',
  busy: 'busy',
  recovering: 'recovering',
  all_held: 'allHeld',
}

/** A documented variable: a text (or number), a flag (true or absent), or an object with keys of its own. */
export interface TemplateVariable {
  name: string
  kind: 'text' | 'flag' | 'object'
  what: string
  /** An object's keys (`t`'s are the catalogue's, given to the check). */
  keys?: readonly string[]
}

/** Every variable a template may use: the README's table and the admin editor's list come from here. */
export const TEMPLATE_VARIABLES: readonly TemplateVariable[] = [
  { name: 'lang', kind: 'text', what: 'The page’s language tag: en, de, fr, es, it, nl, pt-BR, pl, ja or ar.' },
  { name: 'dir', kind: 'text', what: 'The writing direction: ltr, or rtl (Arabic). The shell sets it on <html> already.' },
  { name: 'room', kind: 'text', what: 'The room id.' },
  { name: 'state', kind: 'text', what: `The visitor’s state: ${TEMPLATE_STATES.join(', ')}.` },
  ...TEMPLATE_STATES.map(
    (s): TemplateVariable => ({
      name: STATE_FLAGS[s],
      kind: 'flag',
      what: `True in the ${s} state: {{#${STATE_FLAGS[s]}}}…{{/${STATE_FLAGS[s]}}}.`,
    }),
  ),
  { name: 'title', kind: 'text', what: 'The room’s title (its default one in the page’s language).' },
  { name: 'message', kind: 'text', what: 'The room’s message (its default one in the page’s language).' },
  { name: 'headline', kind: 'text', what: 'The built-in page’s headline for the state, in the page’s language (the title while queued).' },
  { name: 'lead', kind: 'text', what: 'The built-in page’s sentence for the state (the message while queued).' },
  { name: 'hasPlace', kind: 'flag', what: 'True when the visitor has a place in line (and position, ahead and waiting are set).' },
  {
    name: 'position',
    kind: 'text',
    what: 'The visitor’s place in line, written in the language (1.234 in German). Keep it in id="position" and the page’s script updates it.',
  },
  { name: 'ahead', kind: 'text', what: 'People ahead of the visitor (id="ahead" is updated).' },
  { name: 'waiting', kind: 'text', what: 'People in line, or in the pre-queue (id="waiting" is updated).' },
  { name: 'progressValue', kind: 'text', what: 'For a <progress id="progress">: the places passed (waiting − ahead).' },
  { name: 'progressMax', kind: 'text', what: 'For the same <progress>: the line’s length.' },
  { name: 'eta', kind: 'text', what: 'The estimated wait in words: “about 20 minutes” (id="eta" is updated).' },
  { name: 'etaSeconds', kind: 'text', what: 'The estimate in seconds; empty when there is none.' },
  {
    name: 'etaRange',
    kind: 'text',
    what: 'The range around it in words: “Between 15 and 30 minutes — an estimate” (id="eta-range" is updated).',
  },
  { name: 'refreshSeconds', kind: 'text', what: 'How often the page refreshes, seconds.' },
  { name: 'nextPollSeconds', kind: 'text', what: 'When the page polls next, seconds.' },
  { name: 'ticket', kind: 'text', what: 'A scheduled room: the visitor’s ticket in the draw.' },
  {
    name: 'draw',
    kind: 'object',
    keys: ['rank', 'value', 'check'],
    what: 'After a scheduled room’s draw: draw.rank (written in the language), draw.value (hex), draw.check (the URL where anyone checks the draw).',
  },
  {
    name: 'schedule',
    kind: 'object',
    keys: ['prequeueAt', 'opensAt', 'closesAt', 'countdown', 'countdownSeconds'],
    what: 'A scheduled room: schedule.prequeueAt, .opensAt, .closesAt (times as written, in the language), .countdown (“01:00:00”, to the pre-queue or the sale) and .countdownSeconds (an element with data-in="{{schedule.countdownSeconds}}" counts down by itself).',
  },
  {
    name: 't',
    kind: 'object',
    what: 'The page’s texts in its language: t.<key> for the keys of src/http/locales/en.ts but the error pages’, the human check’s, the draw’s and the pieces waits are written with, as {{t.numbers.position}}; their placeholders are filled (the refresh, the schedule’s times).',
  },
]

// --- the check ---------------------------------------------------------------------------------

function invalid(field: string, message: string, line?: number): never {
  const where = line === undefined ? '' : `line ${line}: `
  throw new AnteroomError('ERR_TEMPLATE_INVALID', `${field}: ${where}${message}`, { field, extra: line === undefined ? {} : { line } })
}

/** Where the lines of the last source checked begin: a line is found by a binary search, not a count. */
let lineStarts: { source: string; starts: number[] } | undefined

/** The line (1-based) of a character offset. */
function lineOf(source: string, at: number): number {
  if (lineStarts?.source !== source) {
    const starts = [0]
    for (let i = source.indexOf('\n'); i >= 0; i = source.indexOf('\n', i + 1)) starts.push(i + 1)
    lineStarts = { source, starts }
  }
  const { starts } = lineStarts
  let lo = 0
  let hi = starts.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if ((starts[mid] as number) <= at) lo = mid
    else hi = mid - 1
  }
  return lo + 1
}

/** A parser that keeps no cache of its own: the edge keeps the tokens (src/http/page-templates.ts). */
const writer = new Mustache.Writer()
;(writer as unknown as { templateCache: undefined }).templateCache = undefined

/** A mustache token: type, value, start, end, and for a section its tokens. */
type Token = [string, string, number, number, Token[]?, number?]

/** mustache's own parse, or its error in our words with the line. */
function parseTokens(source: string): Token[] {
  try {
    return writer.parse(source) as Token[]
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    const at = Number(/ at (\d+)$/.exec(message)?.[1] ?? Number.NaN)
    const section = /section "([^"]*)"/.exec(message)?.[1]
    if (message.startsWith('Unclosed tag')) invalid('source', 'a {{ is not closed with }}', lineOf(source, at))
    if (message.startsWith('Unopened section')) invalid('source', `{{/${section}}} closes a section that is not open`, lineOf(source, at))
    if (message.startsWith('Unclosed section')) {
      // At the end of the source: the section never closed; before it, another section's end came first.
      if (at >= source.length) {
        const opened = [...source.matchAll(new RegExp(`\\{\\{\\s*[#^]\\s*${escapeRegExp(section ?? '')}\\s*\\}\\}`, 'g'))].pop()
        invalid('source', `the section {{#${section}}} is not closed (add {{/${section}}})`, lineOf(source, opened?.index ?? at))
      }
      invalid('source', `the section {{#${section}}} must be closed before this`, lineOf(source, at))
    }
    invalid('source', message)
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** What a name may resolve to: the top level, or an object's keys. */
type Scope = ReadonlyMap<string, TemplateVariable | Scope>

function scopeOf(texts: readonly string[]): Scope {
  const top = new Map<string, TemplateVariable | Scope>()
  for (const v of TEMPLATE_VARIABLES) {
    if (v.kind !== 'object') top.set(v.name, v)
    else top.set(v.name, nested(v.name === 't' ? texts : (v.keys ?? [])))
  }
  return top
}

/** Dotted keys as nested scopes: numbers.position → numbers → position. */
function nested(keys: readonly string[]): Scope {
  const root = new Map<string, TemplateVariable | Scope>()
  for (const key of keys) {
    let at = root
    const parts = key.split('.')
    parts.forEach((part, i) => {
      if (i === parts.length - 1) {
        if (!at.has(part)) at.set(part, { name: key, kind: 'text', what: '' })
        return
      }
      let next = at.get(part)
      if (!(next instanceof Map)) at.set(part, (next = new Map()))
      at = next as Map<string, TemplateVariable | Scope>
    })
  }
  return root
}

/** Resolves a name as mustache does: its first part from the innermost context that has it, the rest down from there. */
function resolves(name: string, stack: readonly (Scope | undefined)[]): boolean {
  if (name === '.') return stack.length > 1
  const [first, ...rest] = name.split('.')
  for (let i = stack.length - 1; i >= 0; i--) {
    const scope = stack[i]
    if (scope === undefined || !scope.has(first as string)) continue
    let at: TemplateVariable | Scope | undefined = scope.get(first as string)
    for (const part of rest) at = at instanceof Map ? at.get(part) : undefined
    return at !== undefined
  }
  return false
}

/** Checks every tag of the parse: no raw HTML, no partials or new delimiters, only documented names. */
function checkTokens(source: string, tokens: Token[], texts: readonly string[]): void {
  const top = scopeOf(texts)
  const walk = (list: Token[], stack: (Scope | undefined)[]) => {
    for (const [type, value, start, , children] of list) {
      const line = lineOf(source, start)
      if (type === 'text' || type === '!') continue
      if (type === '&' || type === '{')
        invalid('source', `{{{${value}}}} and {{& ${value}}} would write raw HTML; write {{${value}}}, which is escaped`, line)
      if (type === '>') invalid('source', `partials ({{> ${value}}}) are not supported`, line)
      if (type === '=') invalid('source', 'changing the delimiters ({{= =}}) is not supported', line)
      if (!resolves(value, stack)) invalid('source', `{{${value}}} is not a variable of the page (see the list of variables)`, line)
      if (type === '#' || type === '^') {
        // A section over an object looks its keys up first; over anything else, the same names as outside.
        let inner: Scope | undefined
        if (type === '#') {
          const [first, ...rest] = value.split('.')
          let at: TemplateVariable | Scope | undefined
          for (let i = stack.length - 1; i >= 0 && at === undefined; i--) at = stack[i]?.get(first as string)
          for (const part of rest) at = at instanceof Map ? at.get(part) : undefined
          inner = at instanceof Map ? at : undefined
        }
        walk(children ?? [], type === '#' ? [...stack, inner] : stack)
      }
    }
  }
  walk(tokens, [top])
}

/** Elements a template may not hold: the edge writes the head and the shell, and runs the only script. */
const FORBIDDEN_ELEMENTS: Readonly<Record<string, string>> = {
  script: 'the page’s script is the edge’s own; a template cannot add one',
  style: 'inline styles are blocked by the page’s policy; put them in the template’s style sheet',
  link: 'the template’s style sheet is its stylesheet field; a template cannot link others',
  meta: 'the edge writes the page’s head',
  base: 'the edge writes the page’s head',
  title: 'the edge writes the page’s title (the headline)',
  head: 'the edge writes the page’s head and shell; a template is the body’s content',
  html: 'the edge writes the page’s shell; a template is the body’s content',
  body: 'the edge writes the page’s shell; a template is the body’s content',
  iframe: 'frames are not allowed',
  frame: 'frames are not allowed',
  frameset: 'frames are not allowed',
  object: 'plug-ins are not allowed',
  embed: 'plug-ins are not allowed',
  applet: 'plug-ins are not allowed',
  // Elements whose content the browser reads as text (or, for noscript with scripting on, as raw
  // text): a "</noscript>" inside an attribute value there ends the element, and what follows in the
  // value becomes markup this check saw as a value.
  noscript: 'the edge writes the page’s no-script part; inside one, the browser reads the markup as text',
  textarea: 'its content is read as text by the browser, so a value in it could turn into markup',
  xmp: 'its content is read as text by the browser, so a value in it could turn into markup',
  noembed: 'its content is read as text by the browser, so a value in it could turn into markup',
  noframes: 'its content is read as text by the browser, so a value in it could turn into markup',
  plaintext: 'its content is read as text by the browser, so a value in it could turn into markup',
}

/** Named references a browser reads inside a URL's scheme (the rest are not letters, colons or spaces). */
const URL_NAMED: Readonly<Record<string, string>> = { colon: ':', tab: '\t', newline: '\n' }

/**
 * A tag's text as a browser reads a URL in it: character references decoded, and tabs, line breaks
 * dropped (the URL parser drops them), so that "java&#115;cript:" and
 * "jav&Tab;ascript:" read as what they are.
 */
function asUrlText(tag: string): string {
  return tag
    .replace(/&#x([0-9a-f]+);?|&#([0-9]+);?|&([a-z]+);/gi, (whole, hex: string, dec: string, name: string) => {
      if (name !== undefined) return URL_NAMED[name.toLowerCase()] ?? whole
      const code = hex !== undefined ? Number.parseInt(hex, 16) : Number(dec)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ''
    })
    .replace(/[\t\n\r]/g, '')
}

/** One tag's text (its variables stand in quoted values): its element and attributes. */
function checkTag(source: string, start: number, end: number): void {
  const tag = source.slice(start, end + 1)
  const line = lineOf(source, start)
  if (tag.startsWith('<!') || tag.startsWith('<?'))
    invalid('source', `${tag.slice(0, 12)}… is not allowed: the edge writes the page’s shell`, line)
  const element = /^<\/?\s*([A-Za-z][A-Za-z0-9-]*)/.exec(tag)?.[1]?.toLowerCase()
  if (element === undefined) invalid('source', 'a tag must start with an element name after <', line)
  const why = FORBIDDEN_ELEMENTS[element]
  if (why !== undefined) invalid('source', `<${element}> is not allowed: ${why}`, line)
  // Attribute names, with quoted values taken out (a value may mention anything).
  const names = tag.replace(/"[^"]*"|'[^']*'/g, '""')
  const handler = /[\s"'/](on[a-z]+)\s*=/i.exec(names)?.[1]
  if (handler !== undefined)
    invalid('source', `inline event handlers (${handler}=) are not allowed: the page runs no script but the edge’s`, line)
  if (/[\s"'/]style\s*=/i.test(names))
    invalid('source', 'style= attributes are blocked by the page’s policy; use classes from the style sheet', line)
  if (/[\s"'/]srcdoc\s*=/i.test(names)) invalid('source', 'srcdoc= is not allowed', line)
  if (/(java|vb)script\s*:/i.test(asUrlText(tag))) invalid('source', 'javascript: URLs are not allowed', line)
}

/** The markup rules (the file's opening note): scanned with mustache tags seen for what they are. */
function checkMarkup(source: string): void {
  let state: 'data' | 'tag' | 'dq' | 'sq' | 'comment' = 'data'
  let tagStart = 0
  for (let i = 0; i < source.length; ) {
    if (source.startsWith('{{', i)) {
      const triple = source.startsWith('{{{', i)
      const close = source.indexOf(triple ? '}}}' : '}}', i)
      const kind = source.slice(i + (triple ? 3 : 2)).trimStart()[0]
      const line = lineOf(source, i)
      if (state === 'comment') invalid('source', 'an HTML comment may not hold {{…}}', line)
      if (state === 'tag') invalid('source', 'a {{…}} inside an HTML tag must stand in a quoted attribute value: title="{{title}}"', line)
      if ((state === 'dq' || state === 'sq') && (kind === '#' || kind === '^' || kind === '/'))
        invalid('source', 'a section ({{#…}}, {{^…}}, {{/…}}) may not stand inside an HTML tag; put the whole tag inside it', line)
      i = close < 0 ? source.length : close + (triple ? 3 : 2)
      continue
    }
    const c = source[i]
    if (state === 'data' && c === '<') {
      if (source.startsWith('<!--', i)) {
        state = 'comment'
        i += 4
        continue
      }
      if (!/[A-Za-z/!?]/.test(source[i + 1] ?? ''))
        invalid('source', 'a < that starts no tag: write &lt; for the character', lineOf(source, i))
      state = 'tag'
      tagStart = i
    } else if (state === 'comment' && source.startsWith('-->', i)) {
      state = 'data'
      i += 3
      continue
    } else if (state === 'tag') {
      if (c === '"') state = 'dq'
      else if (c === "'") state = 'sq'
      else if (c === '>') {
        checkTag(source, tagStart, i)
        state = 'data'
      }
    } else if (state === 'dq' && c === '"') state = 'tag'
    else if (state === 'sq' && c === "'") state = 'tag'
    i++
  }
  if (state === 'comment') invalid('source', 'an HTML comment is not closed with -->', lineOf(source, source.lastIndexOf('<!--')))
  if (state !== 'data') invalid('source', 'an HTML tag is not closed with >', lineOf(source, tagStart))
}

/** Whether a host is this machine's loopback, where http:// is allowed for development and tests. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host)
}

/** ANTEROOM_TEMPLATE_STYLE_ORIGINS: comma-separated origins (https, or http on loopback), returned as URL origins. */
export function parseStyleOrigins(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return []
  return text.split(',').map((raw) => {
    const item = raw.trim()
    let url: URL
    try {
      url = new URL(item)
    } catch {
      throw new TypeError(`"${item.slice(0, 80)}" is not an origin like https://cdn.example.com`)
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname)))
      throw new TypeError(`"${item.slice(0, 80)}" must be https (http only on loopback)`)
    if (url.username || url.password || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || item.endsWith('/'))
      throw new TypeError(`"${item.slice(0, 80)}" must be an origin alone: scheme, host and port, no path`)
    return url.origin
  })
}

/** A template's style sheet: null, or an absolute URL whose origin is allowed; as stored (the URL's own spelling). */
export function checkStylesheet(given: unknown, allowedOrigins: readonly string[]): string | null {
  if (given === undefined || given === null || given === '') return null
  if (typeof given !== 'string' || given.length > STYLESHEET_MAX_CHARS)
    invalid('stylesheet', `must be null or a URL of at most ${STYLESHEET_MAX_CHARS} characters`)
  let url: URL
  try {
    url = new URL(given)
  } catch {
    invalid('stylesheet', 'must be an absolute URL, like https://cdn.example.com/waiting-room.css')
  }
  if (url.username || url.password) invalid('stylesheet', 'must not carry a user name or password')
  // The page's policy names the sheet by its URL: characters that end a CSP source are refused.
  if (/[\s;,'"<>]/.test(url.origin + url.pathname)) invalid('stylesheet', 'has characters a Content-Security-Policy cannot name')
  if (!allowedOrigins.includes(url.origin)) {
    const allowed =
      allowedOrigins.length === 0 ? 'none is allowed (ANTEROOM_TEMPLATE_STYLE_ORIGINS is empty)' : `allowed: ${allowedOrigins.join(', ')}`
    invalid('stylesheet', `its origin ${url.origin} is not in ANTEROOM_TEMPLATE_STYLE_ORIGINS (${allowed})`)
  }
  return url.href
}

/**
 * Checks a template as given to the admin API (or read back from the store) and returns it as stored.
 * Throws ERR_TEMPLATE_INVALID naming the field (`source`, `stylesheet`, `name`) and, for the source,
 * the line and the reason. `texts`: the catalogue's keys, which `t.<key>` may name.
 */
export function checkTemplate(
  input: { name: unknown; source: unknown; stylesheet?: unknown },
  o: { styleOrigins: readonly string[]; texts: readonly string[] },
): PageTemplate {
  if (typeof input.name !== 'string' || !TEMPLATE_NAME.test(input.name))
    invalid('name', 'must be 1-64 lower-case letters, digits or dashes')
  const source = input.source
  if (typeof source !== 'string' || source.trim() === '') invalid('source', 'must be the template’s text')
  if (source.length > TEMPLATE_MAX_CHARS)
    invalid('source', `must be at most ${TEMPLATE_MAX_CHARS.toLocaleString('en')} characters, got ${source.length.toLocaleString('en')}`)
  const tokens = parseTokens(source)
  checkTokens(source, tokens, o.texts)
  checkMarkup(source)
  return { name: input.name, source, stylesheet: checkStylesheet(input.stylesheet, o.styleOrigins) }
}
