// The human check over HTTP, on each runtime (test/edge.test.ts on Node, test/worker.test.ts in
// workerd), against the test provider (scripts/lib/human-check-provider.ts: a Turnstile-compatible
// siteverify on loopback): a newcomer gets the widget (page or JSON) and no place; a token that passes
// gives a place in the real line, and siteverify is told the secret and the visitor's address; one
// that fails (forged, used twice, for another host or room) puts the visitor in the shadow lane: a
// queue page and polls like anyone's, no place in the store, never admitted while the line moves and
// others get in; siteverify away (500, a timeout, unreachable) holds newcomers or lets them join, as
// the room says. Every outcome is counted and logged, never with a token or the secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type HumanCheckProvider, startHumanCheckProvider } from '../../scripts/lib/human-check-provider.js'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import { Scrape } from '../support/prometheus.js'
import type { EdgeRuntime, RequestTarget, TestEdge } from '../support/runtimes.js'
import { type StatusBody, Visitor } from '../support/visitor.js'

const ADMIN_TOKEN = 'human-check-admin-token-0123456789'
const HEADER = 'anteroom-human-check'
const room = (id: string, path: string, over: Record<string, unknown> = {}) => ({
  id,
  paths: [path],
  totalActiveUsers: 1,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 10,
  refreshSeconds: 5,
  abandonAfterSeconds: 3600,
  humanCheck: 'turnstile',
  ...over,
})

export function edgeHumanCheckContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  let provider: HumanCheckProvider
  let edge: TestEdge
  let app: RequestTarget
  /** Who passed and waits in the real line (the second test), for the third to let in. */
  let second: Visitor

  beforeAll(async () => {
    origin = await startOrigin()
    provider = await startHumanCheckProvider()
    edge = await runtime.start({
      rooms: [
        room('sale', '/tickets'),
        room('open', '/open', { humanCheckOnError: 'open' }),
        room('plain', '/plain', { humanCheck: 'off', mode: 'paused' }),
      ],
      originUrl: origin.url,
      adminTokens: `ops:${ADMIN_TOKEN}`,
      env: {
        ANTEROOM_HUMAN_CHECK_URL: provider.siteverifyUrl,
        ANTEROOM_HUMAN_CHECK_SECRET: provider.secret,
        ANTEROOM_HUMAN_CHECK_SITE_KEY: provider.siteKey,
        ANTEROOM_HUMAN_CHECK_SCRIPT_URL: provider.scriptUrl,
        // A siteverify that hangs is given up on after this long: the room's policy then applies.
        ANTEROOM_HUMAN_CHECK_TIMEOUT_MS: '300',
        ANTEROOM_LOG_LEVEL: 'debug',
      },
    })
    app = edge.app
  })
  afterAll(async () => {
    await edge?.close()
    await provider?.close()
    await origin?.close()
  })

  const mint = (pass: boolean, over: { hostname?: string; cdata?: string; action?: string } = {}) =>
    provider.mint({ pass, hostname: 'shop.test', action: 'anteroom-join', cdata: 'sale', ...over })
  const answer = async (v: Visitor, roomId: string, token: string) => {
    const res = await v.request(app, `/_anteroom/status?room=${roomId}`, { json: true, headers: { [HEADER]: token } })
    return { status: res.status, body: (await res.json()) as StatusBody & { error?: { code: string; field?: string } } }
  }
  const waiting = async (roomId: string) => (await edge.queue.stats(roomId, edge.clock.now())).waiting

  describe(`human check (${runtime.name})`, () => {
    it('gives a newcomer the widget and no place: JSON state human_check with the site key, the page under a CSP that allows the provider', async () => {
      const v = new Visitor('http://shop.test', '203.0.113.50')
      expect(await v.status(app, 'sale')).toMatchObject({
        room: 'sale',
        state: 'human_check',
        position: null,
        humanCheck: {
          siteKey: provider.siteKey,
          action: 'anteroom-join',
          cData: 'sale',
          header: 'Anteroom-Human-Check',
          scriptUrl: provider.scriptUrl,
        },
      })
      const page = await v.request(app, '/tickets/event/1')
      expect(page.status).toBe(200)
      const csp = page.headers.get('content-security-policy') as string
      expect(csp).toMatch(new RegExp(`script-src \\S+/_anteroom/human-check\\.js ${provider.url}(;| )`))
      expect(csp).toContain(`frame-src ${provider.url};`)
      // Nothing inline runs: script-src names two sources, neither of them inline.
      expect(
        csp
          .split('; ')
          .find((d) => d.startsWith('script-src'))
          ?.split(' '),
      ).toHaveLength(3)
      const html = await page.text()
      expect(html).toContain(`data-sitekey="${provider.siteKey}"`)
      expect(html).toContain(`<script src="${provider.scriptUrl}?render=explicit" async defer></script>`)
      expect(html).toMatch(/<script src="\/_anteroom\/human-check\.js\?v=[0-9a-z]+"><\/script>/)
      expect(html).not.toMatch(/<script>/)
      expect(v.cookies.size).toBe(0)
      const script = await app.request('http://shop.test/_anteroom/human-check.js')
      expect(script.headers.get('content-type')).toMatch(/text\/javascript/)
      expect(await script.text()).toContain('turnstile.render')
      // Only a room that uses the check lets the provider into its page.
      const plain = await new Visitor('http://shop.test', '203.0.113.51').request(app, '/plain/x')
      expect(plain.headers.get('content-security-policy')).not.toContain(provider.url)
      expect(await waiting('sale')).toBe(0)
      expect(provider.calls).toEqual([])
    })

    it('writes the check’s page in the visitor’s language: Accept-Language, ?lang= (kept in its cookie, right to left for Arabic), English otherwise', async () => {
      const german = await new Visitor('http://shop.test', '203.0.113.52').request(app, '/tickets/event/1', {
        headers: { 'accept-language': 'de-AT,de;q=0.9,en;q=0.5' },
      })
      expect(german.headers.get('vary')).toBe('Accept-Language, Cookie')
      const de = await german.text()
      expect(de).toContain('<html lang="de">')
      expect(de).toContain('<h1 id="headline">Bevor Sie sich anstellen</h1>')
      // The script's words too, in the page's language and as ASCII (character references).
      expect(de).toContain('data-msg-checking="Wird gepr&#252;ft&#8230;"')
      expect(/^[\t\n\r\x20-\x7e]*$/.test(de)).toBe(true)
      const v = new Visitor('http://shop.test', '203.0.113.53')
      const arabic = await v.request(app, '/tickets/event/1?lang=ar', { headers: { 'accept-language': 'de' } })
      expect(arabic.headers.getSetCookie().some((c) => c.startsWith('anteroom_lang=ar;'))).toBe(true)
      const ar = await arabic.text()
      expect(ar).toContain('<html lang="ar" dir="rtl">')
      expect(ar).not.toContain('Before you join the line')
      // The choice kept: the next page, without ?lang=, is still in Arabic.
      expect(await (await v.request(app, '/tickets/event/1', { headers: { 'accept-language': 'de' } })).text()).toContain(
        '<html lang="ar" dir="rtl">',
      )
      const english = await (await new Visitor('http://shop.test', '203.0.113.54').request(app, '/tickets/event/1')).text()
      expect(english).toContain('<html lang="en">')
      expect(english).toContain('<h1 id="headline">Before you join the line</h1>')
      expect(english).toContain('data-msg-done="Done. Taking you to your place in line&#8230;"')
      expect(await waiting('sale')).toBe(0)
    })

    it('gives a place in the real line for a token that passes; siteverify is told the secret, the token and the visitor’s address', async () => {
      const first = new Visitor('http://shop.test', '203.0.113.60')
      const token = mint(true)
      expect((await answer(first, 'sale', token)).body.state).toBe('admitted')
      expect(provider.calls.at(-1)).toMatchObject({ secret: provider.secret, response: token, remoteip: '203.0.113.60' })
      second = new Visitor('http://shop.test', '203.0.113.61')
      expect((await answer(second, 'sale', mint(true))).body).toMatchObject({ state: 'queued', position: 1 })
      expect(await waiting('sale')).toBe(1)
      // From then on the queue cookie is the place: no check again.
      const calls = provider.calls.length
      expect(await second.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
      expect(provider.calls.length).toBe(calls)
    })

    it('puts who fails in the shadow lane: answers like the line’s, a queue cookie, no place in the store, never admitted while others get in', async () => {
      // The edge's look at the room (once a second) sees the one waiting: a shadow's place is behind them.
      await edge.clock.advance(1_001)
      await second.status(app, 'sale')
      await edge.settled()
      const before = await waiting('sale')
      const calls = provider.calls.length
      const shadows = [
        // Refused by the provider, a token used once already, made for another host or another room, and no token at all.
        [new Visitor('http://shop.test', '203.0.113.70'), mint(false)],
        [new Visitor('http://shop.test', '203.0.113.71'), provider.calls.at(-1)?.response as string],
        [new Visitor('http://shop.test', '203.0.113.72'), mint(true, { hostname: 'elsewhere.test' })],
        [new Visitor('http://shop.test', '203.0.113.73'), mint(true, { cdata: 'open' })],
        [new Visitor('http://shop.test', '203.0.113.74'), 'not a token'],
      ] as const
      for (const [v, token] of shadows) {
        const { status, body } = await answer(v, 'sale', token)
        expect([status, body.state], token).toEqual([200, 'queued'])
        expect(body.position).toBeGreaterThanOrEqual(2)
        expect(v.cookies.get('anteroom_q_sale')).toMatch(/^q1\.sale\.[A-Za-z0-9_-]{16}\.[0-9a-z]+\.[0-9a-z]+\.[A-Za-z0-9_-]{43}$/)
      }
      // The made-up value was never sent to siteverify; the others were.
      expect(provider.calls.length).toBe(calls + 4)
      expect(await waiting('sale')).toBe(before)
      const [shadow] = shadows[0]
      const page = await shadow.request(app, '/tickets/event/1')
      expect(await page.text()).toMatch(/id="position">\d+</)
      // The line moves: sessions run out and the slot frees, again and again. The one waiting is let in,
      // then a newcomer who passed after the shadows failed; the shadows poll all along, and stay out.
      const later = new Visitor('http://shop.test', '203.0.113.75')
      expect((await answer(later, 'sale', mint(true))).body).toMatchObject({ state: 'queued', position: 2 })
      const shadowStates = new Set<string>()
      const admitted: string[] = []
      for (let i = 0; i < 6; i++) {
        await edge.clock.advance(6_000)
        for (const [name, v] of [
          ['second', second],
          ['later', later],
        ] as const) {
          if (!admitted.includes(name) && (await v.status(app, 'sale')).state === 'admitted') admitted.push(name)
        }
        for (const [v] of shadows) {
          const s = await v.status(app, 'sale')
          shadowStates.add(s.state)
          expect(s.position, 'a place in the shadow lane').toBeGreaterThanOrEqual(1)
        }
      }
      expect(admitted).toEqual(['second', 'later'])
      expect(shadowStates).toEqual(new Set(['queued']))
      expect(await waiting('sale')).toBe(0)
    })

    it('holds newcomers with 503 ERR_HUMAN_CHECK_UNAVAILABLE while siteverify fails or hangs, where the room says so; lets them join where it says open', async () => {
      for (const mode of ['error', 'hang'] as const) {
        provider.siteverify = mode
        const held = await answer(new Visitor('http://shop.test', '203.0.113.80'), 'sale', mint(true))
        expect([held.status, held.body.error], mode).toMatchObject([
          503,
          { code: 'ERR_HUMAN_CHECK_UNAVAILABLE', field: 'Anteroom-Human-Check' },
        ])
        const joined = await answer(new Visitor('http://shop.test', '203.0.113.81'), 'open', mint(true, { cdata: 'open' }))
        expect([joined.status, joined.body.state], mode).toEqual([200, expect.stringMatching(/^(admitted|queued)$/)])
      }
      provider.siteverify = 'answer'
    })

    it('counts the checks by outcome and the shadow visits, and logs them without a token or the secret', async () => {
      const res = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      const m = new Scrape(await res.text())
      const count = (outcome: string, r = 'sale') => m.value('anteroom_human_checks_total', { room: r, outcome })
      // Asked: the first test's two newcomers and the four pages of the languages' test.
      expect([count('asked'), count('passed'), count('failed'), count('error'), count('timeout')]).toEqual([6, 3, 5, 1, 1])
      expect([count('error', 'open'), count('timeout', 'open')]).toEqual([1, 1])
      expect(m.value('anteroom_shadow_visits_total', { room: 'sale' })).toBe(5 + 1 + 6 * 5)
      await expect.poll(() => edge.logs()).toContain('human_check_failed')
      const logs = edge.logs()
      expect(logs).toContain('"reason":"siteverify: timeout-or-duplicate"')
      expect(logs).toContain('"reason":"the token was made for another host"')
      expect(logs).not.toContain(provider.secret)
      for (const call of provider.calls) expect(logs).not.toContain(call.response)
    })

    it('answers newcomers by the room’s policy once siteverify cannot be reached at all', async () => {
      await provider.close()
      const held = await answer(new Visitor('http://shop.test', '203.0.113.90'), 'sale', mint(true))
      expect([held.status, held.body.error?.code]).toEqual([503, 'ERR_HUMAN_CHECK_UNAVAILABLE'])
      const joined = await answer(new Visitor('http://shop.test', '203.0.113.91'), 'open', mint(true, { cdata: 'open' }))
      expect(joined.status).toBe(200)
      expect(joined.body.state).not.toBe('human_check')
    })
  })
}
