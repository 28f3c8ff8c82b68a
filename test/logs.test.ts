// Structured logs: one JSON line per event with its level, the level setting, request ids from a
// trusted header or made, secrets cut out; and a full test sale through `npm start`'s entry point
// (a real Redis with a password, a real PostgreSQL, the bundled booking origin, the admin API,
// metrics, a Redis outage) whose whole output is searched for every secret it was configured with
// and every token and cookie it handed out.
import { type ChildProcess, spawn } from 'node:child_process'
import { Hono } from 'hono'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { configSecrets, loadConfig } from '../src/config/index.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { jsonLog, levelOf } from '../src/core/log.js'
import { requestIdOf } from '../src/http/request-id.js'
import { cookieFetch } from './support/cookie-fetch.js'
import { freshDatabase } from './support/postgres-server.js'
import { freePort, type RedisServer, startRedis } from './support/redis-server.js'

const ROOT = new URL('..', import.meta.url).pathname

describe('the log', () => {
  it('writes one JSON line per event at or above its level, with the time, level and event first', () => {
    const lines: string[] = []
    const log = jsonLog({ level: 'warn', write: (l) => lines.push(l), now: () => Date.UTC(2026, 11, 6) })
    log('admitted', { room: 'sale' })
    log('listening', { url: 'http://127.0.0.1:8080/' })
    log('store_unavailable', { room: 'sale', level: 'debug', event: 'forged', time: 'then' })
    log('error', { code: 'ERR_INTERNAL' })
    expect(lines).toHaveLength(2)
    for (const line of lines) expect(line.endsWith('\n')).toBe(true)
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(Object.keys(parsed[0] as object).slice(0, 3)).toEqual(['time', 'level', 'event'])
    // A field cannot pass for the line's own time, level or event.
    expect(parsed[0]).toEqual({ time: '2026-12-06T00:00:00.000Z', level: 'warn', event: 'store_unavailable', room: 'sale' })
    expect(parsed[1]).toMatchObject({ level: 'error', event: 'error', code: 'ERR_INTERNAL' })
    expect([levelOf('admitted'), levelOf('listening'), levelOf('redis_error'), levelOf('origin_error')]).toEqual([
      'debug',
      'info',
      'warn',
      'error',
    ])
    const all: string[] = []
    const debug = jsonLog({ level: 'debug', write: (l) => all.push(l) })
    debug('admitted', { room: 'sale' })
    expect(all).toHaveLength(1)
  })

  it('cuts out configured secrets wherever they are, credential-named fields, and anything shaped like a signed token', () => {
    const secret = 'queue-secret-that-must-never-show-0123'
    const lines: string[] = []
    const log = jsonLog({ write: (l) => lines.push(l), secrets: [secret, 'short'] })
    const jwt = 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ2MSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU'
    log('redis_error', {
      message: `connect failed for redis://:${secret}@127.0.0.1:6379 while reading ${jwt}`,
      nested: { list: [secret, { deeper: `x${secret}x` }] },
      token: 'whatever-it-holds',
      Authorization: 'Bearer abc',
      cookie: 'anteroom_q_sale=v1.x',
      shortWord: 'a short word stays',
    })
    const line = lines[0] as string
    expect(line).not.toContain(secret)
    expect(line).not.toContain(jwt)
    expect(line).not.toContain('whatever-it-holds')
    expect(line).not.toContain('Bearer abc')
    expect(line).not.toContain('anteroom_q_sale=v1.x')
    expect(JSON.parse(line)).toMatchObject({
      message: 'connect failed for redis://:[redacted]@127.0.0.1:6379 while reading [redacted]',
      nested: { list: ['[redacted]', { deeper: 'x[redacted]x' }] },
      token: '[redacted]',
      shortWord: 'a short word stays',
    })
  })

  it('names every secret a config holds: queue secret, admin and metrics tokens, private key parts, Redis and database passwords', async () => {
    const key = await generateSigningJwk('k1')
    const config = loadConfig({
      ANTEROOM_QUEUE_SECRET: 'q'.repeat(40),
      ANTEROOM_ADMIN_TOKENS: `ann:${'a'.repeat(30)},bob:${'b'.repeat(30)}`,
      ANTEROOM_METRICS_TOKEN: 'm'.repeat(30),
      ANTEROOM_SIGNING_KEYS: JSON.stringify([key]),
      ANTEROOM_REDIS_URL: 'redis+sentinel://:r%40dis-pass@10.0.0.1,10.0.0.2/anteroom',
      ANTEROOM_DATABASE_URL: 'postgres://app:pg-pass-123@db.internal:5432/tickets',
    })
    const secrets = configSecrets(config)
    for (const s of ['q'.repeat(40), 'a'.repeat(30), 'b'.repeat(30), 'm'.repeat(30), key.d, 'r%40dis-pass', 'r@dis-pass', 'pg-pass-123'])
      expect(secrets).toContain(s)
  })

  it('a request id comes from the trusted header when it is a plain token, else it is made; one per request', async () => {
    const app = new Hono()
    app.get('/', (c) =>
      c.json({ id: requestIdOf(c, 'x-request-id'), again: requestIdOf(c, 'x-request-id'), untrusted: requestIdOf(c, undefined) }),
    )
    const ask = async (headers: Record<string, string>) => (await (await app.request('/', { headers })).json()) as Record<string, string>
    const given = await ask({ 'x-request-id': 'lb-7f3a:0001' })
    expect(given.id).toBe('lb-7f3a:0001')
    expect(given.again).toBe(given.id)
    // The id is kept per request, whichever header the caller trusts.
    expect(given.untrusted).toBe(given.id)
    for (const forged of ['two words', 'x"}, "level": "error', 'a'.repeat(129), '']) {
      const made = await ask({ 'x-request-id': forged })
      expect(made.id).toMatch(/^[0-9a-f-]{36}$/)
    }
    const a = await ask({})
    const b = await ask({})
    expect(a.id).not.toBe(b.id)
  })
})

describe('a full test sale through the Node entry point', () => {
  const QUEUE_SECRET = 'log-test-queue-secret-0123456789abcdef'
  const ADMIN_TOKEN = 'log-test-admin-token-0123456789ab'
  const OTHER_ADMIN = 'log-test-other-admin-0123456789cd'
  const METRICS_TOKEN = 'log-test-metrics-token-0123456789'
  const REDIS_PASSWORD = 'log-test-redis-password-0123'
  const PG_PASSWORD = 'log-test-pg-password-0123'
  let redis: RedisServer
  let database: Awaited<ReturnType<typeof freshDatabase>>
  let child: ChildProcess | undefined
  let output = ''
  let edge: string
  let signingKey: Awaited<ReturnType<typeof generateSigningJwk>>
  /** Every token and cookie value the sale handed out. */
  const handedOut = new Set<string>()

  /** The starter checks the server with a PING before any password: the password is set after. */
  async function withPassword(server: RedisServer): Promise<RedisServer> {
    const client = new Redis(server.url)
    await client.config('SET', 'requirepass', REDIS_PASSWORD)
    client.disconnect()
    return server
  }

  beforeAll(async () => {
    redis = await withPassword(await startRedis())
    database = await freshDatabase(inject('postgresUrl'), 'logs')
    signingKey = await generateSigningJwk('log-test')
  })
  afterAll(async () => {
    if (child?.pid !== undefined && child.exitCode === null) {
      const exited = new Promise((r) => child?.once('exit', r))
      process.kill(child.pid, 'SIGKILL')
      await exited
    }
    await redis.stop()
    await database.drop()
  })

  async function start() {
    const [port, originPort] = [await freePort(), await freePort()]
    edge = `http://127.0.0.1:${port}`
    const dbUrl = new URL(database.url)
    dbUrl.password = PG_PASSWORD
    child = spawn(process.execPath, ['--import', 'tsx', 'src/entry/node.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        ANTEROOM_PORT: String(port),
        ANTEROOM_DEMO_ORIGIN_PORT: String(originPort),
        ANTEROOM_REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}`,
        ANTEROOM_DATABASE_URL: dbUrl.toString(),
        ANTEROOM_QUEUE_SECRET: QUEUE_SECRET,
        ANTEROOM_SIGNING_KEYS: JSON.stringify([signingKey]),
        ANTEROOM_ADMIN_TOKENS: `ann:${ADMIN_TOKEN},bob:${OTHER_ADMIN}`,
        ANTEROOM_METRICS_TOKEN: METRICS_TOKEN,
        ANTEROOM_LOG_LEVEL: 'debug',
        ANTEROOM_REQUEST_ID_HEADER: 'x-request-id',
        ANTEROOM_HISTORY_SAMPLE_SECONDS: '1',
        ANTEROOM_ROOMS: JSON.stringify([
          {
            id: 'demo',
            paths: ['/'],
            totalActiveUsers: 3,
            newUsersPerMinute: 600,
            refreshSeconds: 2,
            abandonAfterSeconds: 6,
            originCommands: 'end-session',
            event: 'demo',
          },
        ]),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    for (let i = 0; i < 300 && !output.includes('"event":"listening"'); i++) {
      if (child.exitCode !== null) throw new Error(`the entry point exited: ${output}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(output).toContain('"event":"listening"')
  }

  /** A browser: a cookie jar, and every cookie it is given noted as handed out. */
  const browser = () =>
    cookieFetch(
      () => edge,
      (value) => {
        if (value.length >= 8) handedOut.add(value)
      },
    )

  it('logs what happened, as JSON lines with levels and request ids, and never a secret, token or cookie', async () => {
    await start()
    // Five visitors: three get in, buy a seat each (the origin ends their sessions), two wait.
    const visitors = Array.from({ length: 5 }, () => browser())
    for (const go of visitors) expect((await go('/', { headers: { accept: 'text/html' } })).status).toBe(200)
    for (const [i, go] of visitors.slice(0, 3).entries()) {
      const hold = await go('/events/demo/holds', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seats: [`A${i + 1}`] }),
      })
      expect(hold.status).toBe(201)
      const { hold: held } = (await hold.json()) as { hold: { id: string } }
      const paid = await go(`/holds/${held.id}/confirm`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `log-test-${i}-key` },
      })
      expect(paid.status).toBe(200)
    }
    // Someone tries admin tokens; the operator signs in, changes the room, scrapes the metrics.
    for (const guess of ['guess-0123456789abcdefghijkl', `${ADMIN_TOKEN}x`])
      expect(
        (await fetch(`${edge}/_anteroom/api/rooms`, { headers: { authorization: `Bearer ${guess}`, 'x-request-id': 'probe-42' } })).status,
      ).toBe(401)
    const admin = browser()
    const login = await admin('/_anteroom/admin/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ann', token: ADMIN_TOKEN }),
    })
    expect(login.status).toBe(200)
    const { csrf } = (await login.json()) as { csrf: string }
    handedOut.add(csrf)
    const current = await admin('/_anteroom/api/rooms/demo')
    const patched = await admin('/_anteroom/api/rooms/demo', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'if-match': current.headers.get('etag') ?? '', 'x-csrf-token': csrf },
      body: JSON.stringify({ newUsersPerMinute: 300 }),
    })
    expect(patched.status).toBe(200)
    const metrics = await fetch(`${edge}/_anteroom/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    expect(metrics.status).toBe(200)
    expect(await metrics.text()).toContain('anteroom_visits_total')
    // Forged and broken cookies get places, not errors.
    const forger = browser()
    expect(
      (await forger('/', { headers: { cookie: 'anteroom_a_demo=eyJhbGciOiJFUzI1NiJ9.e30.AAAA; anteroom_q_demo=v1.%%%' } })).status,
    ).toBe(200)
    // Redis goes away mid-sale and comes back: the waiting visitors hear "busy", the log says why.
    const port = redis.port
    await redis.stop()
    const busy = await visitors[4]?.('/', { headers: { accept: 'application/json', 'x-request-id': 'poll-during-outage' } })
    expect(busy?.status).toBe(503)
    redis = await withPassword(await startRedis([], port))
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${edge}/_anteroom/health`)).status === 200) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect((await visitors[4]?.('/', { headers: { accept: 'application/json' } }))?.status).toBe(200)

    const exited = new Promise((r) => child?.once('exit', r))
    child?.kill('SIGTERM')
    await exited

    // Every line is one JSON object with its time, level and event.
    const lines = output.trimEnd().split('\n')
    const events = lines.map((line) => {
      const parsed = JSON.parse(line) as { time: string; level: string; event: string; requestId?: string }
      expect(Number.isNaN(Date.parse(parsed.time))).toBe(false)
      expect(['debug', 'info', 'warn', 'error']).toContain(parsed.level)
      expect(parsed.level).toBe(levelOf(parsed.event))
      return parsed
    })
    const named = (event: string) => events.filter((e) => e.event === event)
    expect(named('listening')).toHaveLength(1)
    expect(named('admitted').length).toBeGreaterThanOrEqual(3)
    for (const e of named('admitted')) expect(e.requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(named('origin_command').length).toBe(3)
    expect(named('admin_signin_failed').map((e) => e.requestId)).toEqual(['probe-42', 'probe-42'])
    expect(named('store_unavailable').some((e) => e.requestId === 'poll-during-outage')).toBe(true)

    // No secret it was configured with, no token or cookie it handed out, appears anywhere in its output.
    const secrets = [QUEUE_SECRET, ADMIN_TOKEN, OTHER_ADMIN, METRICS_TOKEN, REDIS_PASSWORD, PG_PASSWORD, signingKey.d as string]
    expect(handedOut.size).toBeGreaterThanOrEqual(8)
    for (const s of [...secrets, ...handedOut]) expect(output.includes(s), `the output holds ${s.slice(0, 12)}…`).toBe(false)
    expect(output).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16,}/)
  })
})
