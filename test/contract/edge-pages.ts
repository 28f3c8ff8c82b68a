// The queue page in the visitor's language and a room's own page template, over HTTP, on each runtime
// (test/edge.test.ts on Node, test/worker.test.ts in workerd), on Redis: the language chosen each way
// (?lang= and its cookie, Accept-Language, the room's locale), right to left, Vary, the JSON status the
// same in every language, error pages; templates made, refused (naming the field and the line), used
// for every state's page under a policy that names their style sheet, previewed, seen by another edge
// within a second, and kept while a room uses them.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { StockSnapshot } from '../../src/ports/claim-gate.js'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import { type EdgeRuntime, freshDb, nodeRuntime, type RequestTarget, type TestEdge } from '../support/runtimes.js'
import { Visitor } from '../support/visitor.js'

const TOKEN = 'pages-admin-token-0123456789abcdef'
const SHEET = 'https://cdn.example.com/shop.css'
const STYLE_ORIGINS = 'https://cdn.example.com,http://127.0.0.1:9'

/** A page's text as a browser reads it: character references decoded. */
function decoded(html: string): string {
  return html
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}

async function page(app: RequestTarget, v: Visitor, path: string, headers: Record<string, string> = {}) {
  const res = await v.request(app, path, { headers })
  const html = await res.text()
  return { res, html, text: decoded(html) }
}

function admin(app: RequestTarget, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return app.request(`http://shop.test/_anteroom/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

/** A room's settings changed through the admin API (this edge reloads them at once). */
async function patch(app: RequestTarget, room: string, change: Record<string, unknown>) {
  const etag = (await admin(app, 'GET', `/rooms/${room}`)).headers.get('etag') as string
  const res = await admin(app, 'PATCH', `/rooms/${room}`, change, { 'if-match': etag })
  return { status: res.status, body: (await res.json()) as { error?: { field?: string; message: string } } }
}

/** The source every templated page below is made from: a marker, the state, and the numbers the script updates. */
const SOURCE = `<section class="shop" data-mark="shop-template" data-flag-state="{{state}}">
<h1>{{headline}}</h1>
{{#hasPlace}}<p>{{t.numbers.position}}: <strong id="position">{{position}}</strong> / <span id="waiting">{{waiting}}</span></p>{{/hasPlace}}
{{#paused}}<p class="flag">paused flag</p>{{/paused}}{{#closed}}<p class="flag">closed flag</p>{{/closed}}{{#ended}}<p class="flag">ended flag</p>{{/ended}}
{{#soldOut}}<p class="flag">sold-out flag</p>{{/soldOut}}{{#challenge}}<p class="flag">challenge flag</p>{{/challenge}}
{{#scheduled}}<p class="flag">scheduled flag</p>{{/scheduled}}{{#prequeue}}<p class="flag">prequeue flag {{ticket}}</p>{{/prequeue}}
{{#schedule}}<p id="countdown" data-in="{{countdownSeconds}}">{{countdown}}</p>{{/schedule}}
<p>{{lead}}</p>
</section>`

const seats = (sold: number, of: number): StockSnapshot['units'] =>
  Array.from({ length: of }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < sold ? 1 : 0 }))

export function edgePagesContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  let edge: TestEdge
  let other: TestEdge
  const event = `ev-${Math.random().toString(36).slice(2, 10)}`

  beforeAll(async () => {
    origin = await startOrigin()
    const redisUrl = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
    const rooms = [
      { id: 'lang', paths: ['/lang'], totalActiveUsers: 1, newUsersPerMinute: 60, mode: 'paused', locale: 'it', refreshSeconds: 20 },
      { id: 'tpl', paths: ['/tpl'], totalActiveUsers: 1, newUsersPerMinute: 60, sessionDurationSeconds: 600, refreshSeconds: 20, event },
    ]
    const env = { ANTEROOM_TEMPLATE_STYLE_ORIGINS: STYLE_ORIGINS }
    edge = await runtime.start({ rooms, originUrl: origin.url, redisUrl, adminTokens: `ops:${TOKEN}`, env })
    // Another edge on the same Redis, Node: what one edge's admin writes, the other uses within a second.
    other = await nodeRuntime.start({ rooms, originUrl: origin.url, redisUrl, adminTokens: `ops:${TOKEN}`, env })
    await edge.gate.reconcile(event, { units: seats(0, 5), holds: [] }, 0, edge.clock.now())
  })
  afterAll(async () => {
    await edge?.close()
    await other?.close()
    await origin?.close()
  })

  /** The edge's next look at its rooms and templates: a second of its clock, a request to start it, and its end. */
  async function nextLook(e: TestEdge = edge) {
    await e.clock.advance(1000)
    await new Visitor().request(e.app, '/_anteroom/status?room=no-such-room', { json: true })
    await e.settled()
  }

  describe(`the page's language (${runtime.name})`, () => {
    it('follows Accept-Language (by q-value, de-AT read as de), and says the page varies with it and the cookies', async () => {
      const { res, html, text } = await page(edge.app, new Visitor(), '/lang/x', { 'accept-language': 'sv;q=0.9, de-AT, en;q=0.5' })
      expect(res.status).toBe(200)
      expect(res.headers.get('vary')).toBe('Accept-Language, Cookie')
      expect(html).toMatch(/^<!doctype html>\n<html lang="de"><head>/)
      expect(text).toContain('<h1 id="headline">Die Warteschlange ist angehalten</h1>')
      expect(text).toContain('Diese Seite aktualisiert sich alle 20 Sekunden von selbst.')
      expect(text).toContain('<dd id="eta">noch unbekannt</dd>')
      expect(res.headers.getSetCookie().some((c) => c.startsWith('anteroom_lang='))).toBe(false)
      // Written in ASCII: a character reference for everything else.
      expect(/^[\t\n\r\x20-\x7e]*$/.test(html)).toBe(true)
    })

    it("falls back to the room's locale, then English is never forced on a visitor whose languages we lack", async () => {
      const { html, text } = await page(edge.app, new Visitor(), '/lang', { 'accept-language': 'sv, fi;q=0.8' })
      expect(html).toContain('<html lang="it">')
      expect(text).toContain('La coda è in pausa')
      const plain = await page(edge.app, new Visitor(), '/lang')
      expect(plain.html).toContain('<html lang="it">')
    })

    it('takes ?lang= first and keeps it in a cookie (SameSite=Lax) for the next pages; a tag we lack changes nothing', async () => {
      const v = new Visitor()
      const first = await page(edge.app, v, '/lang/seat?lang=ar', { 'accept-language': 'fr' })
      expect(first.html).toContain('<html lang="ar" dir="rtl">')
      expect(first.text).toContain('قائمة الانتظار متوقفة مؤقتًا')
      const cookie = first.res.headers.getSetCookie().find((c) => c.startsWith('anteroom_lang='))
      expect(cookie).toMatch(/^anteroom_lang=ar; Path=\/; Max-Age=31536000; HttpOnly; SameSite=Lax$/)
      // The next page, without the query and with a browser that asks for French: still Arabic.
      const next = await page(edge.app, v, '/lang/seat', { 'accept-language': 'fr' })
      expect(next.html).toContain('<html lang="ar" dir="rtl">')
      expect(next.res.headers.getSetCookie().some((c) => c.startsWith('anteroom_lang='))).toBe(false)
      // Another choice replaces it; a tag that names no language of ours is passed over.
      const ja = await page(edge.app, v, '/lang?lang=ja-JP')
      expect(ja.html).toContain('<html lang="ja">')
      expect(ja.text).toContain('列は一時停止中です')
      expect(v.cookies.get('anteroom_lang')).toBe('ja')
      const zz = await page(edge.app, v, '/lang?lang=zz-ZZ', { 'accept-language': 'de' })
      expect(zz.html).toContain('<html lang="ja">')
      expect(zz.res.headers.getSetCookie().some((c) => c.startsWith('anteroom_lang='))).toBe(false)
    })

    it('answers the JSON status byte for byte the same in every language, without Vary or a language cookie', async () => {
      const v = new Visitor()
      await v.request(edge.app, '/lang')
      const plain = await v.request(edge.app, '/_anteroom/status?room=lang', { json: true })
      const body = await plain.text()
      for (const [path, headers] of [
        ['/_anteroom/status?room=lang&lang=ar', { 'accept-language': 'ja' }],
        ['/_anteroom/status?room=lang', { 'accept-language': 'de-AT, de;q=0.9' }],
      ] as const) {
        const res = await v.clone().request(edge.app, path, { json: true, headers })
        expect(await res.text(), path).toBe(body)
        expect(res.headers.get('vary'), path).toBeNull()
        expect(
          res.headers.getSetCookie().some((c) => c.startsWith('anteroom_lang=')),
          path,
        ).toBe(false)
      }
      expect(Object.keys(JSON.parse(body))).toEqual([
        'room',
        'state',
        'position',
        'ahead',
        'waiting',
        'etaSeconds',
        'etaRange',
        'refreshSeconds',
        'nextPollSeconds',
      ])
      // A protected URL asked for JSON answers the same status, in no language either.
      const json = await v.clone().request(edge.app, '/lang?lang=pl', { json: true, headers: { 'accept-language': 'pl' } })
      expect(Object.keys(await json.json())).toEqual(Object.keys(JSON.parse(body)))
    })

    it("shows a visitor's error page in their language; API callers get the same JSON as ever", async () => {
      const bad = await page(edge.app, new Visitor(), '/lang/%2e%2e%2fsecret', { 'accept-language': 'ja' })
      expect(bad.res.status).toBe(400)
      expect(bad.html).toContain('<html lang="ja">')
      expect(bad.text).toContain('<h1>不正なリクエスト</h1>')
      expect(bad.text).toContain('エラー 400')
      expect(bad.res.headers.get('vary')).toBe('Accept-Language, Cookie')
      const rtl = await page(edge.app, new Visitor(), '/lang/%2e%2e%2fsecret?lang=ar')
      expect(rtl.html).toContain('<html lang="ar" dir="rtl">')
      const json = await new Visitor().request(edge.app, '/lang/%2e%2e%2fsecret', { json: true, headers: { 'accept-language': 'ja' } })
      expect(await json.json()).toMatchObject({
        error: { code: 'ERR_BAD_PATH', message: expect.stringMatching(/^This address cannot be served/) },
      })
    })
  })

  describe(`page templates (${runtime.name})`, () => {
    let etag = ''
    const admitted = new Visitor()

    it('refuses a bad template, naming its field and, for the source, the line and the reason', async () => {
      const put = (body: unknown, headers: Record<string, string> = { 'if-none-match': '*' }) =>
        admin(edge.app, 'PUT', '/templates/shop', body, headers)
      const cases: [unknown, string, number | undefined, RegExp][] = [
        [{ source: '<p>\n{{headline}}\n{{{title}}}</p>' }, 'source', 3, /raw HTML/],
        [{ source: '<p>{{headline}}</p>\n<p>{{nope}}</p>' }, 'source', 2, /\{\{nope\}\} is not a variable/],
        [{ source: '<div>\n{{#paused}}\n<p>x</p>' }, 'source', 2, /not closed/],
        [{ source: '<p>\n<script>alert(1)</script>' }, 'source', 2, /<script> is not allowed/],
        [{ source: '<p onclick="x()">x</p>' }, 'source', 1, /inline event handlers/],
        [{ source: '<p style="color:red">x</p>' }, 'source', 1, /style= attributes/],
        [{ source: '<link rel="stylesheet" href="https://evil.example/x.css">' }, 'source', 1, /<link> is not allowed/],
        [
          { source: '<p>x</p>', stylesheet: 'https://evil.example/x.css' },
          'stylesheet',
          undefined,
          /not in ANTEROOM_TEMPLATE_STYLE_ORIGINS/,
        ],
        [{ source: '<p>x</p>', colour: 'red' }, 'colour', undefined, /is not a member of a template/],
        [{ source: 7 }, 'source', undefined, /must be the template’s text/],
      ]
      for (const [body, field, line, reason] of cases) {
        const res = await put(body)
        expect(res.status, JSON.stringify(body)).toBe(400)
        const { error } = (await res.json()) as { error: { code: string; field: string; line?: number; message: string } }
        expect(error, JSON.stringify(body)).toMatchObject({ code: 'ERR_TEMPLATE_INVALID', field, ...(line === undefined ? {} : { line }) })
        expect(error.message, JSON.stringify(body)).toMatch(reason)
      }
      expect((await put({ source: '<p>x</p>' }, {})).status).toBe(428)
      expect((await edge.app.request('http://shop.test/_anteroom/api/templates', { headers: { accept: 'application/json' } })).status).toBe(
        401,
      )
      expect((await admin(edge.app, 'GET', '/templates/shop')).status).toBe(404)
    })

    it('makes one (If-None-Match: *), audits it, and a room may name it only once it exists', async () => {
      expect(await patch(edge.app, 'tpl', { template: 'shop' })).toMatchObject({ status: 400, body: { error: { field: 'template' } } })
      const made = await admin(edge.app, 'PUT', '/templates/shop', { source: SOURCE, stylesheet: SHEET }, { 'if-none-match': '*' })
      expect(made.status).toBe(201)
      etag = made.headers.get('etag') as string
      expect(etag).toBe('"rev-1"')
      expect(await made.json()).toEqual({ template: { name: 'shop', source: SOURCE, stylesheet: SHEET }, etag })
      expect((await admin(edge.app, 'PUT', '/templates/shop', { source: SOURCE }, { 'if-none-match': '*' })).status).toBe(412)
      const audit = (await (await admin(edge.app, 'GET', '/audit?kind=changes')).json()) as { entries: { action: string; who: string }[] }
      expect(audit.entries[0]).toMatchObject({ action: 'template.create', who: 'ops' })
      // Before the room names it, the room's page is the built-in one.
      expect((await admitted.request(edge.app, '/tpl/a')).status).toBe(200)
      const queued = await page(edge.app, new Visitor(), '/tpl')
      expect(queued.html).not.toContain('shop-template')
      expect(await patch(edge.app, 'tpl', { template: 'shop' })).toMatchObject({ status: 200 })
      const list = (await (await admin(edge.app, 'GET', '/templates')).json()) as {
        templates: { template: { name: string }; rooms: string[] }[]
      }
      expect(list.templates.find((t) => t.template.name === 'shop')?.rooms).toEqual(['tpl'])
    })

    it('renders the queued page with the template, in the edge’s shell, under a policy that names its style sheet', async () => {
      const v = new Visitor()
      const { res, html, text } = await page(edge.app, v, '/tpl/seat', { 'accept-language': 'de' })
      expect(res.status).toBe(200)
      expect(html).toMatch(/^<!doctype html>\n<html lang="de"><head>/)
      expect(html).toContain(`<link rel="stylesheet" href="${SHEET}">`)
      expect(html).toContain('data-mark="shop-template" data-flag-state="queued"')
      expect(text).toContain('Ihr Platz in der Warteschlange: <strong id="position">')
      expect(html).toMatch(/<script src="\/_anteroom\/queue\.js\?v=[0-9a-z]+"><\/script><\/body><\/html>$/)
      const csp = res.headers.get('content-security-policy') as string
      expect(csp).toMatch(
        /^default-src 'none'; style-src http:\/\/shop\.test\/_anteroom\/queue\.css https:\/\/cdn\.example\.com\/shop\.css; /,
      )
      expect(csp).toContain('script-src http://shop.test/_anteroom/queue.js;')
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).not.toContain('unsafe-inline')
      expect(res.headers.get('vary')).toBe('Accept-Language, Cookie')
      // The JSON status of a room with a template is the status.
      expect(Object.keys(await v.status(edge.app, 'tpl'))).toContain('nextPollSeconds')
    })

    it('renders every state: paused, closed, ended, challenge, sold out, scheduled, pre-queue', async () => {
      const state = async (v: Visitor, flag: string, headers: Record<string, string> = {}) => {
        const { html, text } = await page(edge.app, v, '/tpl/seat', headers)
        expect(html, flag).toContain('data-mark="shop-template"')
        expect(text, flag).toContain(`${flag} flag`)
        return { html, text }
      }
      await patch(edge.app, 'tpl', { mode: 'paused' })
      await state(new Visitor(), 'paused', { 'accept-language': 'fr' })
      await patch(edge.app, 'tpl', { mode: 'closed' })
      const closed = await state(new Visitor(), 'closed')
      expect(closed.html).not.toContain('<script')
      await patch(edge.app, 'tpl', { mode: 'fifo' })
      // The admitted visitor's session is ended by an admin: their next page says so.
      const claims = JSON.parse(
        Buffer.from((admitted.cookies.get('anteroom_a_tpl') as string).split('.')[1] as string, 'base64url').toString(),
      )
      expect((await admin(edge.app, 'POST', `/rooms/tpl/sessions/${claims.sub}/end`)).status).toBe(200)
      await nextLook()
      await state(admitted, 'ended', { 'accept-language': 'ar' })
      // A newcomer of a room with proof of work: the challenge page has the template's body too.
      await patch(edge.app, 'tpl', { powDifficulty: 1 })
      const challenge = await page(edge.app, new Visitor(), '/tpl/seat', { 'accept-language': 'es' })
      expect(challenge.html).toContain('data-state="challenge"')
      expect(challenge.text).toContain('challenge flag')
      expect(challenge.text).toContain('<h1>Entrando en la fila</h1>')
      expect(challenge.html).toContain(`<link rel="stylesheet" href="${SHEET}">`)
      expect(challenge.res.headers.get('content-security-policy')).toMatch(
        /style-src http:\/\/shop\.test\/_anteroom\/queue\.css https:\/\/cdn\.example\.com\/shop\.css;.* script-src 'sha256-/,
      )
      await patch(edge.app, 'tpl', { powDifficulty: 0 })
      // Everything sold: a newcomer gets the sold-out page.
      await edge.gate.reconcile(event, { units: seats(5, 5), holds: [] }, 0, edge.clock.now())
      await nextLook()
      await expect
        .poll(async () => (await page(edge.app, new Visitor(), '/tpl')).text.includes('sold-out flag'), { timeout: 10_000, interval: 100 })
        .toBe(true)
      await state(new Visitor(), 'sold-out', { 'accept-language': 'pl' })
      // A scheduled sale: before its pre-queue, then in it (with the visitor's ticket).
      const at = (ms: number) => new Date(edge.clock.now() + ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
      await patch(edge.app, 'tpl', { event: null, schedule: { prequeueAt: at(600_000), opensAt: at(1_200_000) } })
      const scheduled = await state(new Visitor(), 'scheduled', { 'accept-language': 'ja' })
      expect(scheduled.text).toContain('data-in="600">00:10:00</p>')
      await edge.clock.advance(600_000)
      await nextLook()
      const pre = await state(new Visitor(), 'prequeue')
      expect(pre.text).toMatch(/prequeue flag [A-Za-z0-9_-]{16}/)
    })

    it('previews every state in every language asked for, without a script, for the admin UI’s frames', async () => {
      for (const state of ['queued', 'prequeue', 'scheduled', 'paused', 'closed', 'sold_out', 'challenge', 'ended']) {
        for (const lang of ['en', 'ar']) {
          const res = await admin(edge.app, 'GET', `/templates/shop/preview?state=${state}&lang=${lang}&room=tpl`)
          expect(res.status, `${state} ${lang}`).toBe(200)
          expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
          const csp = res.headers.get('content-security-policy') as string
          expect(csp).toContain("frame-ancestors 'self'")
          expect(csp).toContain(SHEET)
          expect(csp).not.toContain('script-src')
          const html = await res.text()
          expect(html).toContain(`<html lang="${lang}"${lang === 'ar' ? ' dir="rtl"' : ''}>`)
          expect(html).toContain(`data-state="${state}"`)
          expect(html).toContain('data-mark="shop-template"')
          expect(html).not.toContain('<script')
        }
      }
      const builtIn = await admin(edge.app, 'GET', '/rooms/lang/preview?state=queued&lang=pl')
      expect(builtIn.status).toBe(200)
      const builtInHtml = decoded(await builtIn.text())
      expect(builtInHtml).toContain('<html lang="pl">')
      expect(builtInHtml).toContain('Twoje miejsce w kolejce')
      expect(builtInHtml).not.toContain('<script')
      for (const [query, field] of [
        ['state=nope', 'state'],
        ['lang=xx', 'lang'],
        ['room=nope', 'room'],
      ]) {
        const res = await admin(edge.app, 'GET', `/templates/shop/preview?${query}`)
        expect(res.status, query).toBe(400)
        expect(await res.json()).toMatchObject({ error: { code: 'ERR_BAD_REQUEST', field } })
      }
      expect((await edge.app.request('http://shop.test/_anteroom/api/templates/shop/preview')).status).toBe(401)
    })

    it('changes it from its ETag only; every edge uses the change within a second', async () => {
      const stale = await admin(edge.app, 'PUT', '/templates/shop', { source: '<p>{{headline}}</p>' }, { 'if-match': '"rev-0"' })
      expect(stale.status).toBe(412)
      expect(await stale.json()).toMatchObject({ error: { code: 'ERR_STALE', current: { name: 'shop', source: SOURCE }, etag } })
      // Changed through the other edge: this one sees it after its next look.
      const changed = SOURCE.replace('shop-template', 'shop-template-2')
      const res = await admin(other.app, 'PUT', '/templates/shop', { source: changed, stylesheet: SHEET }, { 'if-match': etag })
      expect(res.status).toBe(200)
      etag = res.headers.get('etag') as string
      await nextLook()
      await expect
        .poll(async () => (await page(edge.app, new Visitor(), '/tpl')).html.includes('shop-template-2'), {
          timeout: 10_000,
          interval: 100,
        })
        .toBe(true)
    })

    it('keeps a template while a room uses it; without one the room’s page is the built-in one again', async () => {
      const inUse = await admin(edge.app, 'DELETE', '/templates/shop', undefined, { 'if-match': etag })
      expect(inUse.status).toBe(409)
      expect(await inUse.json()).toMatchObject({ error: { code: 'ERR_TEMPLATE_IN_USE', rooms: ['tpl'] } })
      expect(await patch(edge.app, 'tpl', { template: null })).toMatchObject({ status: 200 })
      expect((await admin(edge.app, 'DELETE', '/templates/shop', undefined, { 'if-match': etag })).status).toBe(200)
      expect((await admin(edge.app, 'GET', '/templates/shop')).status).toBe(404)
      const audit = (await (await admin(edge.app, 'GET', '/audit?kind=changes')).json()) as { entries: { action: string }[] }
      expect(audit.entries.map((e) => e.action)).toEqual(expect.arrayContaining(['template.create', 'template.update', 'template.delete']))
      const { html } = await page(edge.app, new Visitor(), '/tpl')
      expect(html).not.toContain('shop-template')
    })
  })
}
