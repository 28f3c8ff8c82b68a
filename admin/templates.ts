// The admin API's page templates (core/page-template.ts, src/http/page-templates.ts), under
// /_anteroom/api: list them, read one (with its ETag), create or replace one (If-None-Match: * or
// If-Match: its ETag), remove one that no room uses, the variables a template may use, and previews:
// a template's page for each state and language with sample values, and a room's page as its visitors
// see it. Every change is checked (a bad one is a 400 naming its field, and for the source the line and
// the reason), compare-and-set on the template's revision, and audited. routes.ts mounts these behind
// the API's credentials and CSRF check.
import type { Context, Hono } from 'hono'
import { type ObjectNode, readBody } from '../src/core/body-schema.js'
import { AnteroomError } from '../src/core/errors.js'
import { isLocale, LOCALE_TAGS, LOCALES, type Locale } from '../src/core/locales.js'
import {
  STATE_FLAGS,
  STYLESHEET_MAX_CHARS,
  TEMPLATE_MAX_CHARS,
  TEMPLATE_NAME,
  TEMPLATE_STATES,
  TEMPLATE_VARIABLES,
  type TemplateState,
} from '../src/core/page-template.js'
import type { RoomSettings } from '../src/core/settings.js'
import type { VisitorStatus } from '../src/core/visit.js'
import { texts } from '../src/http/i18n.js'
import {
  checkedTemplate,
  compileTemplate,
  previewPage,
  sampleStatus,
  TEMPLATE_TEXT_KEYS,
  templatePolicy,
} from '../src/http/page-templates.js'
import { QUEUE_ASSETS, queuePage } from '../src/http/pages.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { SettingsStore } from '../src/ports/settings-store.js'
import type { TemplateStore, VersionedTemplate } from '../src/ports/template-store.js'
import type { RoomDirectory } from '../src/rooms/directory.js'
import { ETAG } from './inputs.js'

/** What the template routes work with. */
export interface TemplateDeps {
  store: TemplateStore
  /** ANTEROOM_TEMPLATE_STYLE_ORIGINS. */
  styleOrigins: readonly string[]
}

/** PUT /api/templates/:name: the source and the style sheet; the name is the path's. */
export const TEMPLATE_BODY: ObjectNode = {
  type: 'object',
  unknown: 'is not a member of a template (source, stylesheet)',
  wrong: 'The body must be a JSON object',
  required: ['source'],
  properties: {
    source: {
      type: 'string',
      wrong: 'must be the template’s text',
      description: `The mustache source, at most ${TEMPLATE_MAX_CHARS.toLocaleString('en')} characters: the body of the page, inside the edge’s shell.`,
    },
    stylesheet: {
      type: 'string',
      absent: [null, ''],
      wrong: `must be null or a URL of at most ${STYLESHEET_MAX_CHARS} characters`,
      description: 'The template’s own style sheet: an absolute URL whose origin is in ANTEROOM_TEMPLATE_STYLE_ORIGINS; null for none.',
    },
  },
}

/** A template as the API answers it. */
const etagOf = (rev: number) => `"rev-${rev}"`
const answerOf = (v: VersionedTemplate) => ({ template: v.template, etag: etagOf(v.rev) })

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_BAD_REQUEST', `${field}: ${message}`, { field })
}

/** The `state` of a preview (queued by default). */
function stateOf(c: Context): TemplateState {
  const state = c.req.query('state') ?? 'queued'
  if (!(TEMPLATE_STATES as readonly string[]).includes(state)) bad('state', `must be one of ${TEMPLATE_STATES.join(', ')}`)
  return state as TemplateState
}

/** The `lang` of a preview (the room's locale, or English). */
function langOf(c: Context, fallback: Locale): Locale {
  const lang = c.req.query('lang')
  if (lang === undefined || lang === '') return fallback
  if (!isLocale(lang)) bad('lang', `must be one of ${LOCALE_TAGS.join(', ')}`)
  return lang
}

/** A preview's answer: HTML the admin UI frames (frame-ancestors 'self'); it runs no script. */
function previewAnswer(c: Context, html: string, sheet?: { csp: string; origin: string }): Response {
  const css = `${new URL(c.req.url).origin}${QUEUE_ASSETS.css.path}`
  const policy =
    sheet === undefined
      ? `default-src 'none'; style-src ${css}; base-uri 'none'; form-action 'none'`
      : templatePolicy(css, undefined, sheet).replace("form-action 'self'", "form-action 'none'")
  return c.body(html, 200, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `${policy}; frame-ancestors 'self'`,
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  })
}

/** The built-in page for a sample visitor, as a preview: without its script and its noscript refresh. */
function builtInPreview(state: TemplateState, room: RoomSettings, locale: Locale): string {
  const v = sampleStatus(state, room)
  if (v.state === 'challenge') {
    const t = texts(locale)
    return `<!doctype html>
<html lang="${locale}"${t.dir === 'rtl' ? ' dir="rtl"' : ''}><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="stylesheet" href="${QUEUE_ASSETS.css.path}?v=${QUEUE_ASSETS.css.version}"><title>${t.html('challenge.headline')}</title></head>
<body><main id="anteroom" data-state="challenge"><div class="card" role="region"><h1 id="headline">${t.html('challenge.headline')}</h1><p>${t.html('challenge.lead')}</p></div></main></body></html>`
  }
  return queuePage(v as VisitorStatus, room, locale)
    .replace(/<noscript>[\s\S]*?<\/noscript>/, '')
    .replace(/<script [^>]*><\/script>/, '')
}

export function templateRoutes(
  // biome-ignore lint/suspicious/noExplicitAny: the admin app's own variables (routes/common.ts Env)
  app: Hono<any>,
  o: {
    templates: TemplateDeps
    settings: SettingsStore
    audit: AuditLog
    rooms: RoomDirectory
    now: () => number
    readJson: (c: Context) => Promise<Record<string, unknown>>
  },
): void {
  const { store, styleOrigins } = o.templates
  const audit = (c: Context, action: string, before: unknown, after: unknown) =>
    o.audit.append({ at: new Date(o.now()).toISOString(), who: c.get('who'), action, room: null, before, after })

  async function found(c: Context): Promise<VersionedTemplate> {
    const name = c.req.param('name') ?? ''
    const v = TEMPLATE_NAME.test(name) ? await store.get(name) : undefined
    if (v === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such template', { field: 'name' })
    return v
  }

  /** The rooms whose `template` names it. */
  async function usedBy(name: string): Promise<string[]> {
    return (await o.settings.list()).filter((r) => r.settings.template === name).map((r) => r.settings.id)
  }

  /** A write the store refused: someone changed the template first (412 with theirs), or it is there already. */
  function stale(c: Context, current: VersionedTemplate | undefined): never {
    if (current) c.header('etag', etagOf(current.rev))
    throw new AnteroomError('ERR_STALE', 'Someone else changed this template first; here is the current one', {
      extra: { current: current?.template ?? null, etag: current ? etagOf(current.rev) : null },
    })
  }

  // What a template may use: the variables, the texts (t.<key>), the states and languages of previews.
  app.get('/api/template-variables', (c) =>
    c.json({
      variables: TEMPLATE_VARIABLES.map((v) => ({ ...v, keys: v.name === 't' ? TEMPLATE_TEXT_KEYS : v.keys })),
      states: TEMPLATE_STATES.map((state) => ({ state, flag: STATE_FLAGS[state] })),
      locales: LOCALE_TAGS.map((tag) => ({ tag, name: LOCALES[tag].name, dir: LOCALES[tag].dir })),
      styleOrigins,
      maxChars: TEMPLATE_MAX_CHARS,
    }),
  )

  app.get('/api/templates', async (c) => {
    const [all, rooms] = await Promise.all([store.list(), o.settings.list()])
    return c.json({
      templates: all.map((v) => ({
        ...answerOf(v),
        rooms: rooms.filter((r) => r.settings.template === v.template.name).map((r) => r.settings.id),
      })),
    })
  })

  app.get('/api/templates/:name', async (c) => {
    const v = await found(c)
    c.header('etag', etagOf(v.rev))
    return c.json(answerOf(v))
  })

  app.put('/api/templates/:name', async (c) => {
    const name = c.req.param('name') ?? ''
    if (!TEMPLATE_NAME.test(name))
      throw new AnteroomError('ERR_TEMPLATE_INVALID', 'name: must be 1-64 lower-case letters, digits or dashes', { field: 'name' })
    const ifMatch = c.req.header('if-match')
    const create = c.req.header('if-none-match') === '*'
    if (ifMatch === undefined && !create)
      throw new AnteroomError(
        'ERR_IF_MATCH_REQUIRED',
        'Send If-Match with the ETag you read to change a template, or If-None-Match: * to make a new one',
      )
    const body = readBody<{ source: string; stylesheet?: string | null }>(TEMPLATE_BODY, await o.readJson(c), 'ERR_TEMPLATE_INVALID')
    const template = checkedTemplate({ name, source: body.source, stylesheet: body.stylesheet ?? null }, styleOrigins)
    const before = await store.get(name)
    let expected = 0
    if (!create) {
      const rev = ETAG.exec(ifMatch ?? '')?.[1]
      if (rev === undefined || before === undefined || Number(rev) !== before.rev) stale(c, before)
      expected = before.rev
    }
    const result = await store.put(template, expected)
    if (!result.ok) stale(c, result.current)
    await audit(c, before === undefined ? 'template.create' : 'template.update', before?.template ?? null, template)
    // This edge at once (its rooms' templates come with the reload); the others within a second.
    await o.rooms.reload()
    c.header('etag', etagOf(result.rev))
    return c.json(answerOf({ template, rev: result.rev }), before === undefined ? 201 : 200)
  })

  app.delete('/api/templates/:name', async (c) => {
    const v = await found(c)
    const ifMatch = c.req.header('if-match')
    if (ifMatch === undefined) throw new AnteroomError('ERR_IF_MATCH_REQUIRED', 'Send If-Match with the ETag you read')
    const rooms = await usedBy(v.template.name)
    if (rooms.length > 0)
      throw new AnteroomError('ERR_TEMPLATE_IN_USE', `Rooms use this template: ${rooms.join(', ')}; choose another for them first`, {
        extra: { rooms },
      })
    const result = await store.remove(v.template.name, Number(ETAG.exec(ifMatch)?.[1] ?? -1))
    if (!result.ok) stale(c, result.current)
    await audit(c, 'template.delete', v.template, null)
    await o.rooms.reload()
    return c.json({ deleted: v.template.name })
  })

  // A template's page for a state and a language, with sample values (and a room's title, message and refresh).
  app.get('/api/templates/:name/preview', async (c) => {
    const v = await found(c)
    const roomId = c.req.query('room')
    const room = roomId === undefined ? undefined : (await o.settings.get(roomId))?.settings
    if (roomId !== undefined && room === undefined) bad('room', 'no such room')
    const sample = room ?? {
      id: 'preview',
      title: 'You are in line',
      message: 'Thanks for waiting. We let people in in the order they arrived.',
      refreshSeconds: 20,
      schedule: null,
      locale: 'en',
    }
    const compiled = compileTemplate(v, styleOrigins)
    const html = previewPage(compiled, stateOf(c), sample, langOf(c, isLocale(sample.locale) ? sample.locale : 'en'))
    return previewAnswer(c, html, compiled.sheet)
  })

  // A room's page as its visitors see it: its template or the built-in page, in a state and a language.
  app.get('/api/rooms/:id/preview', async (c) => {
    const room = (await o.settings.get(c.req.param('id') ?? ''))?.settings
    if (room === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'id' })
    const state = stateOf(c)
    const locale = langOf(c, room.locale)
    const stored = room.template === null ? undefined : await store.get(room.template)
    if (stored === undefined) return previewAnswer(c, builtInPreview(state, room, locale))
    const compiled = compileTemplate(stored, styleOrigins)
    return previewAnswer(c, previewPage(compiled, state, room, locale), compiled.sheet)
  })
}

/** A room's `template` must name one that exists when it changes (throws ERR_SETTINGS_INVALID naming it). */
export async function checkTemplateRef(store: TemplateStore, next: RoomSettings, before: RoomSettings): Promise<void> {
  if (next.template === null || next.template === before.template) return
  if ((await store.get(next.template)) === undefined)
    throw new AnteroomError('ERR_SETTINGS_INVALID', `template: no template is called ${next.template} (make it in the Page tab first)`, {
      field: 'template',
    })
}
