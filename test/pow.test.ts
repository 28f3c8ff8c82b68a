// Proof of work at join (core/pow.ts, src/http/pow.ts; issue #13 §3): in a room with powDifficulty > 0
// a visitor without a queue token gets no place and causes no store call until they answer a fresh
// challenge that the edge signed for this room and for the visitor id the place will have. Every bad
// answer gets a clear 4xx with a new challenge, never a 500. The edge cases of the check are unit tests;
// the join runs on Node (embedded store and Redis) and in workerd, on a manual clock.
import { randomBytes } from 'node:crypto'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { jsMac } from '../src/adapters/js/mac.js'
import { nodeDigest } from '../src/adapters/node/digest.js'
import { webCryptoDigest } from '../src/adapters/webcrypto/digest.js'
import {
  type ChallengeStatus,
  leadingZeroBits,
  POW_CHALLENGE_MS,
  type PowChallenge,
  PowChallenges,
  solveChallenge,
} from '../src/core/pow.js'
import { parseRoomSettings, ROOM_SETTINGS } from '../src/core/settings.js'
import { POW_WORKER_SCRIPT } from '../src/http/pow.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type EdgeRuntime, nodeRuntime, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const SECRET = 'a-test-secret-that-is-long-enough-1234'
const D = 8

/** A nonce whose hash has fewer than `bits` leading zero bits (most have). */
async function tooEasy(challenge: string, bits: number): Promise<string> {
  for (let n = 0; ; n++) {
    const answer = `${challenge}.${n.toString(36)}`
    if (leadingZeroBits(await nodeDigest.sha256(answer)) < bits) return answer
  }
}

/** Replaces field i (0-based) of a dotted string. */
function withField(s: string, i: number, value: string): string {
  const parts = s.split('.')
  parts[i] = value
  return parts.join('.')
}

describe('proof-of-work challenges (core/pow.ts)', () => {
  const pow = new PowChallenges(jsMac(SECRET), nodeDigest)
  let c: PowChallenge
  let answer: string
  beforeAll(async () => {
    c = await pow.issue('sale', D, T0)
    answer = await solveChallenge(c.value, D, nodeDigest)
  })

  it('counts leading zero bits', () => {
    expect(leadingZeroBits(new Uint8Array([0xff]))).toBe(0)
    expect(leadingZeroBits(new Uint8Array([0x01, 0xff]))).toBe(7)
    expect(leadingZeroBits(new Uint8Array([0, 0, 0x10]))).toBe(19)
    expect(leadingZeroBits(new Uint8Array(32))).toBe(256)
  })

  it('issues a fresh, signed challenge for a fresh visitor id, expiring in two minutes', async () => {
    expect(c.value).toMatch(/^p1\.sale\.[A-Za-z0-9_-]{16}\.8\.[0-9a-z]+\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]{43}$/)
    expect(c.value.split('.')[2]).toBe(c.visitor)
    expect(c.expires).toBe(T0 + POW_CHALLENGE_MS)
    const again = await pow.issue('sale', D, T0)
    expect(again.visitor).not.toBe(c.visitor)
    expect(again.value).not.toBe(c.value)
  })

  it('accepts a solution until the challenge expires, giving the visitor id it was issued for', async () => {
    expect(leadingZeroBits(await nodeDigest.sha256(answer))).toBeGreaterThanOrEqual(D)
    expect(await pow.check(answer, 'sale', D, T0)).toEqual({ ok: true, challenge: c })
    expect(await pow.check(answer, 'sale', D, c.expires - 1)).toMatchObject({ ok: true })
    expect(await pow.check(answer, 'sale', D, c.expires)).toEqual({ ok: false, problem: 'expired' })
  })

  it('refuses a challenge for another room', async () => {
    expect(await pow.check(answer, 'other', D, T0)).toEqual({ ok: false, problem: 'wrong-room' })
    // Renaming the room in the challenge breaks its signature.
    expect(await pow.check(withField(answer, 1, 'other'), 'other', D, T0)).toEqual({ ok: false, problem: 'forged' })
  })

  it('refuses forgeries: another secret, or any signed field changed (visitor, difficulty, expiry, salt, mac)', async () => {
    const foreign = new PowChallenges(jsMac('another-secret-that-is-long-enough-999'), nodeDigest)
    const theirs = await foreign.issue('sale', D, T0)
    expect(await pow.check(await solveChallenge(theirs.value, D, nodeDigest), 'sale', D, T0)).toEqual({ ok: false, problem: 'forged' })
    const changes: [number, string][] = [
      [2, 'AAAAAAAAAAAAAAAA'],
      [3, '1'],
      [4, (c.expires + 3_600_000).toString(36)],
      [5, 'AAAAAAAAAAA'],
      [6, 'A'.repeat(43)],
    ]
    for (const [i, value] of changes) {
      const forged = withField(c.value, i, value)
      // Solved for real, so that only the signature is wrong.
      expect(await pow.check(await solveChallenge(forged, 1, nodeDigest), 'sale', 1, T0), `field ${i}`).toEqual({
        ok: false,
        problem: 'forged',
      })
    }
  })

  it("refuses a solution with too few zero bits, for the challenge's difficulty or the room's, if higher", async () => {
    expect(await pow.check(await tooEasy(c.value, D), 'sale', D, T0)).toEqual({ ok: false, problem: 'insufficient' })
    expect(await pow.check(await tooEasy(c.value, D), 'sale', 0, T0)).toEqual({ ok: false, problem: 'insufficient' })
    // The room's difficulty went up since: the old answer no longer does.
    const bits = leadingZeroBits(await nodeDigest.sha256(answer))
    expect(await pow.check(answer, 'sale', bits + 1, T0)).toEqual({ ok: false, problem: 'insufficient' })
  })

  it('reads malformed answers as malformed, never throws', async () => {
    const bad = [
      '',
      '.',
      'garbage',
      c.value,
      `${c.value}.`,
      `${c.value}.${'a'.repeat(33)}`,
      `${c.value}.a.b`,
      `${c.value}.no spaces`,
      `${c.value}.ü`,
      withField(answer, 0, 'p2'),
      withField(answer, 1, 'Sale'),
      withField(answer, 2, 'short'),
      withField(answer, 3, '-1'),
      withField(answer, 3, '100'),
      withField(answer, 4, 'ZZ'),
      withField(answer, 5, 'x'),
      withField(answer, 6, 'x'),
      `${answer}${'0'.repeat(300)}`,
      'p1.sale.AAAAAAAAAAAAAAAA.8.zzzzzzzzzzz.AAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.0\u0000',
    ]
    for (const answer of bad)
      expect(await pow.check(answer, 'sale', D, T0), JSON.stringify(answer)).toEqual({ ok: false, problem: 'malformed' })
  })

  it("signs and checks the same way with node:crypto's SHA-256 and WebCrypto's, so Node and Worker edges accept each other", async () => {
    const web = new PowChallenges(jsMac(SECRET), webCryptoDigest)
    expect(await web.check(answer, 'sale', D, T0)).toEqual({ ok: true, challenge: c })
    const fromWeb = await web.issue('sale', D, T0)
    expect(await pow.check(await solveChallenge(fromWeb.value, D, webCryptoDigest), 'sale', D, T0)).toMatchObject({ ok: true })
  })

  it('the browser worker finds the answers that the edge accepts', async () => {
    // The worker script, run here as a worker runs it: a global onmessage in, postMessage out.
    const posted = new Promise<{ answer: string; hashes: number }>((postMessage) => {
      const scope: Record<string, unknown> = { postMessage, crypto, TextEncoder, performance }
      runInNewContext(POW_WORKER_SCRIPT, scope)
      ;(scope.onmessage as (e: { data: unknown }) => void)({ data: { challenge: c.value, difficulty: D } })
    })
    const found = await posted
    expect(await pow.check(found.answer, 'sale', D, T0)).toMatchObject({ ok: true })
    // It tries nonces 0, 1, 2, ... in order, so it finds the first one, as solveChallenge does.
    expect(found.answer).toBe(answer)
  })

  it('powDifficulty is one room setting: off by default, 0 to 24', () => {
    expect(parseRoomSettings({ id: 'r', newUsersPerMinute: 1, totalActiveUsers: 1 }).powDifficulty).toBe(0)
    expect(ROOM_SETTINGS.powDifficulty).toMatchObject({ type: 'integer', min: 0, max: 24, default: 0 })
  })
})

interface ErrorJson {
  error: { code: string; message: string; field?: string; challenge?: ChallengeStatus['challenge'] }
}

function powSuite(runtime: EdgeRuntime, redisUrl?: () => string) {
  describe(`joining a room with proof of work (${runtime.name}${redisUrl ? ', Redis' : ''})`, () => {
    let origin: OriginServer
    let edge: TestEdge
    let polls = 0
    const id = `pow-${randomBytes(4).toString('hex')}`
    const other = `${id}-b`
    const path = `/${id}`
    beforeAll(async () => {
      origin = await startOrigin()
      edge = await runtime.start({
        rooms: [
          { id, paths: [path], totalActiveUsers: 1, newUsersPerMinute: 60, powDifficulty: D, abandonAfterSeconds: 3600 },
          { id: other, paths: [`/${other}`], totalActiveUsers: 1, newUsersPerMinute: 60, powDifficulty: D },
          { id: `${id}-off`, paths: [`/${id}-off`], totalActiveUsers: 1, newUsersPerMinute: 60 },
        ],
        originUrl: origin.url,
        t0: T0,
        redisUrl: redisUrl?.(),
      })
      // On Node the test sees the edge's own store object, so it can count the edge's store calls.
      if (runtime.name === 'node') {
        const poll = edge.queue.poll.bind(edge.queue)
        edge.queue.poll = (input) => {
          polls++
          return poll(input)
        }
      }
    })
    afterAll(async () => {
      await edge?.close()
      await origin?.close()
    })

    const waiting = async (room = id) => (await edge.queue.stats(room, edge.clock.now())).waiting
    const challengeOf = async (v: Visitor, at = path): Promise<ChallengeStatus> => {
      const res = await v.request(edge.app, at, { json: true })
      expect(res.status).toBe(200)
      expect(res.headers.getSetCookie()).toEqual([])
      const body = (await res.json()) as ChallengeStatus
      expect(body).toMatchObject({ state: 'challenge', position: null, challenge: { difficulty: D, header: 'Anteroom-Pow' } })
      return body
    }
    const answerWith = (v: Visitor, answer: string, at = path, json = true) =>
      v.request(edge.app, at, { json, headers: json ? { 'anteroom-pow': answer } : { 'anteroom-pow': answer, accept: 'text/html' } })

    it('a new visitor gets a challenge, and neither a place nor a store call', async () => {
      const before = polls
      const v = new Visitor()
      const { challenge } = await challengeOf(v)
      expect(challenge.expiresInSeconds).toBe(120)
      expect(challenge.value.split('.')[1]).toBe(id)
      // The status endpoint answers the same.
      const status = await v.status(edge.app, id)
      expect(status).toMatchObject({ state: 'challenge', position: null })
      expect(polls).toBe(before)
      expect(await waiting()).toBe(0)
      expect(origin.requests).toHaveLength(0)
    })

    it('a solved challenge gets the place of the visitor id it was issued for, and a replay only that same place', async () => {
      // Someone holds the room's one slot, so the next ones wait.
      const holder = new Visitor()
      const held = await answerWith(holder, await solveChallenge((await challengeOf(holder)).challenge.value, D, nodeDigest), path, false)
      expect(held.status).toBe(200)
      expect(holder.cookies.has(`anteroom_a_${id}`)).toBe(true)
      expect(origin.requests.at(-1)?.url).toBe(path)
      // The answer header is the edge's: it never reaches the origin.
      expect(origin.requests.at(-1)?.headers['anteroom-pow']).toBeUndefined()

      const v = new Visitor()
      const { challenge } = await challengeOf(v)
      const answer = await solveChallenge(challenge.value, D, nodeDigest)
      const res = await answerWith(v, answer)
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ state: 'queued', position: 1 })
      const visitor = challenge.value.split('.')[2]
      expect(v.cookies.get(`anteroom_q_${id}`)?.split('.')[2]).toBe(visitor)
      expect(await waiting()).toBe(1)

      // Replayed by another client (no cookies): the same visitor id and the same place, not a second one.
      const replay = new Visitor()
      expect(await (await answerWith(replay, answer)).json()).toMatchObject({ state: 'queued', position: 1 })
      expect(replay.cookies.get(`anteroom_q_${id}`)?.split('.')[2]).toBe(visitor)
      expect(await waiting()).toBe(1)

      // With the queue token the visitor is never asked again, long after the challenge expired.
      await edge.clock.advance(POW_CHALLENGE_MS + 10_000)
      expect(await v.status(edge.app, id)).toMatchObject({ state: 'queued', position: 1 })
      const page = await v.request(edge.app, path)
      expect(await page.text()).toContain('id="position"')
      expect(await waiting()).toBe(1)
    })

    it('through the status endpoint too, as the queue page answers', async () => {
      const v = new Visitor()
      const { challenge } = await challengeOf(v)
      const res = await answerWith(v, await solveChallenge(challenge.value, D, nodeDigest), `/_anteroom/status?room=${id}`)
      expect(await res.json()).toMatchObject({ state: 'queued', position: 2 })
      expect(v.cookies.get(`anteroom_q_${id}`)?.split('.')[2]).toBe(challenge.value.split('.')[2])
    })

    it('each bad answer gets a clear 4xx with a fresh challenge, and no place', async () => {
      const v = new Visitor()
      const { challenge } = await challengeOf(v)
      const expired = await solveChallenge(challenge.value, D, nodeDigest)
      const otherRoom = await solveChallenge((await challengeOf(new Visitor(), `/${other}`)).challenge.value, D, nodeDigest)
      const cases: [string, string, number, string][] = [
        ['garbage', 'not an answer', 400, 'ERR_POW_INVALID'],
        ['unsolved', challenge.value, 400, 'ERR_POW_INVALID'],
        ['forged', withField(expired, 6, 'A'.repeat(43)), 400, 'ERR_POW_INVALID'],
        ['another room', otherRoom, 400, 'ERR_POW_INVALID'],
        ['too easy', await tooEasy(challenge.value, D), 403, 'ERR_POW_INSUFFICIENT'],
      ]
      const places = await waiting()
      const before = polls
      const check = async (name: string, answer: string, status: number, code: string) => {
        const res = await answerWith(new Visitor(), answer)
        expect(res.status, name).toBe(status)
        expect(res.headers.getSetCookie(), name).toEqual([])
        const body = (await res.json()) as ErrorJson
        expect(body.error, name).toMatchObject({ code, field: 'anteroom-pow' })
        // The fresh challenge is one that works.
        const fresh = body.error.challenge as ChallengeStatus['challenge']
        expect(fresh).toMatchObject({ difficulty: D, expiresInSeconds: 120, header: 'Anteroom-Pow' })
        expect(fresh.value).not.toBe(challenge.value)
        return fresh
      }
      for (const c of cases) await check(...c)
      await edge.clock.advance(POW_CHALLENGE_MS)
      const fresh = await check('expired', expired, 403, 'ERR_POW_EXPIRED')
      expect(polls).toBe(before)
      expect(await waiting()).toBe(places)
      // A visitor's page gets the error page, not a 500.
      const page = await answerWith(new Visitor(), 'not an answer', path, false)
      expect(page.status).toBe(400)
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      expect(await page.text()).toContain('<h1>Bad request</h1>')
      // The fresh challenge of a refusal gets a place.
      const again = await answerWith(v, await solveChallenge(fresh.value, D, nodeDigest))
      expect(await again.json()).toMatchObject({ state: 'queued' })
      expect(await waiting()).toBe(places + 1)
    })

    it('a browser gets the page that solves it: a Web Worker allowed by a tight CSP, and a message without JavaScript', async () => {
      const res = await new Visitor().request(edge.app, `${path}/seat/1`)
      expect(res.status).toBe(200)
      expect(res.headers.get('refresh')).toBeNull()
      const csp = res.headers.get('content-security-policy') ?? ''
      expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'; worker-src http:\/\/shop\.test\/_anteroom\/pow-worker\.js;/)
      const html = await res.text()
      expect(html).toContain(`data-difficulty="${D}"`)
      expect(html).toMatch(/data-challenge="p1\./)
      expect(html).toMatch(/<noscript>.*This waiting room needs JavaScript to give you a place in line\./)
      const script = await new Visitor().request(edge.app, '/_anteroom/pow-worker.js')
      expect(script.status).toBe(200)
      expect(script.headers.get('content-type')).toMatch(/^text\/javascript/)
      expect(await script.text()).toBe(POW_WORKER_SCRIPT)
    })

    it('a room without proof of work gives a place at once, as before', async () => {
      const v = new Visitor()
      const res = await v.request(edge.app, `/${id}-off`, { json: true })
      expect(res.status).toBe(200)
      expect(v.cookies.has(`anteroom_a_${id}-off`)).toBe(true)
    })
  })
}

powSuite(nodeRuntime)
powSuite(nodeRuntime, () => inject('redisUrl'))
powSuite(workerRuntime(() => inject('redisUrl')))
