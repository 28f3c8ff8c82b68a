// Admin sign-in throttling, each edge on a Redis database of its own: lockouts by address, by account name and by IPv6 /64, on the sign-in form and the API, with no token in the log.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { buildEdge } from '../src/entry/build.js'
import { ALICE, api, BOB, built, expectNoTokens, loggedEdge, login, origin, useAdminEdges, wrong } from './support/admin-api.js'

useAdminEdges()

describe('admin sign-in throttling', () => {
  it('60 wrong sign-ins from one address: four 401s, then 429 with Retry-After; the lockout doubles up to 15 minutes', async () => {
    const { app, clock, lines, failures } = await loggedEdge()
    const address = '10.0.0.5'
    const results = []
    for (let i = 0; i < 60; i++) results.push(await login(app, wrong(i), { address }))
    expect(results.map((r) => r.status)).toEqual([401, 401, 401, 401, ...Array(56).fill(429)])
    expect(results[3]?.body.error?.code).toBe('ERR_UNAUTHORIZED')
    for (const r of results.slice(4)) {
      expect(r.retryAfter).toBe('1')
      expect(r.body.error?.code).toBe('ERR_TOO_MANY_ATTEMPTS')
    }
    expect(results[4]?.body.error?.message).toBe('That admin token is not valid. Too many failed sign-ins: try again in 1 second.')
    expect(results[5]?.body.error?.message).toBe('Too many failed sign-ins: try again in 1 second.')
    // Attempts while locked are not checked, so not counted: five failures, each logged once.
    expect(failures().map((f) => f.failures)).toEqual([1, 2, 3, 4, 5])
    expect(failures()[4]).toMatchObject({ via: 'login', client: address, failures: 5, lockedSeconds: 1 })
    expect(failures()[4]?.account).toBeUndefined()
    // Not even the right token gets in while the address is locked; another address is not locked.
    expect((await login(app, ALICE, { address })).status).toBe(429)
    expect((await login(app, wrong(100), { address: '10.0.0.6' })).status).toBe(401)

    // Each failure after a lockout doubles it, up to 15 minutes.
    const waits: number[] = []
    let wait = 1
    for (let n = 6; n <= 17; n++) {
      clock.advance(wait * 1000)
      const r = await login(app, wrong(n + 100), { address })
      expect(r.status).toBe(429)
      wait = Number(r.retryAfter)
      waits.push(wait)
    }
    expect(waits).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900])
    clock.advance(300_000)
    const midway = await login(app, ALICE, { address })
    expect([midway.status, midway.retryAfter, midway.body.error?.message]).toEqual([
      429,
      '600',
      'Too many failed sign-ins: try again in 10 minutes.',
    ])
    // Once the lockout is over the right token signs in, and that clears the address.
    clock.advance(600_000)
    expect((await login(app, ALICE, { address })).body.who).toBe('alice')
    expect((await login(app, wrong(200), { address })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ client: address, failures: 1 })
    expectNoTokens(lines, [ALICE, ...Array.from({ length: 201 }, (_, i) => wrong(i))])
  })

  it('failures naming an account count against it from any address; without the name its owner still signs in', async () => {
    const { app, lines, failures } = await loggedEdge()
    for (let i = 1; i <= 4; i++) {
      const r = await login(app, wrong(i), { name: 'alice', address: `10.1.0.${i}` })
      expect([r.status, r.body.error?.message]).toEqual([401, 'That name and admin token do not match'])
    }
    const fifth = await login(app, wrong(5), { name: 'alice', address: '10.1.0.5' })
    expect([fifth.status, fifth.retryAfter, fifth.body.error?.code]).toEqual([429, '1', 'ERR_TOO_MANY_ATTEMPTS'])
    expect(failures().at(-1)).toEqual({
      via: 'login',
      client: '10.1.0.5',
      account: 'alice',
      failures: 1,
      accountFailures: 5,
      lockedSeconds: 1,
      // A made id: the test sends no trusted request-id header.
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    })
    // The account is locked: its right token, naming it, is refused unchecked from a new address...
    expect((await login(app, ALICE, { name: 'alice', address: '10.1.0.6' })).status).toBe(429)
    // ... while other accounts, and the same token without the name, sign in.
    expect((await login(app, BOB, { name: 'bob', address: '10.1.0.7' })).body.who).toBe('bob')
    const owner = await login(app, ALICE, { address: '10.1.0.8' })
    expect([owner.status, owner.body.who]).toEqual([200, 'alice'])
    // That success cleared the account: naming it works again.
    expect((await login(app, ALICE, { name: 'alice', address: '10.1.0.9' })).body.who).toBe('alice')
    // A real token of another account does not sign in under this name, and counts as a failure.
    expect((await login(app, BOB, { name: 'alice', address: '10.1.0.10' })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ account: 'alice', failures: 1, accountFailures: 1 })
    // A malformed name is refused before any check.
    for (const name of ['no spaces', 5, 'x'.repeat(65)]) {
      const r = await login(app, ALICE, { name, address: '10.1.0.11' })
      expect([r.status, r.body.error?.field]).toEqual([400, 'name'])
    }
    expectNoTokens(lines, [ALICE, BOB, ...Array.from({ length: 6 }, (_, i) => wrong(i))])
  })

  it('ANTEROOM_ADMIN_TOKEN alone signs in under the name "admin"', async () => {
    const token = 'single-admin-token-0123456789abcdef'
    const config = loadConfig({
      ANTEROOM_ROOMS: JSON.stringify([{ id: 'one', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1 }]),
      ANTEROOM_QUEUE_SECRET: 'test-queue-secret-0123456789abcdef',
      ANTEROOM_ADMIN_TOKEN: token,
    })
    const edge = await buildEdge(config, { originUrl: origin.url })
    built.push(edge)
    expect((await login(edge.app, token, { name: 'admin' })).body.who).toBe('admin')
    expect((await login(edge.app, token, { name: 'alice' })).status).toBe(401)
  })

  it('wrong bearer tokens count against the address, and a locked address gets 429 on the API too', async () => {
    const { app, clock, lines, failures } = await loggedEdge()
    const address = '10.2.0.1'
    for (let i = 0; i < 4; i++) expect((await api(app, 'GET', '/api/rooms', { token: wrong(i), address })).status).toBe(401)
    const fifth = await api(app, 'GET', '/api/rooms', { token: wrong(4), address })
    expect([fifth.status, fifth.headers.get('retry-after'), fifth.body.error.code]).toEqual([429, '1', 'ERR_TOO_MANY_ATTEMPTS'])
    expect(failures().map((f) => [f.via, f.client, f.failures])).toEqual([1, 2, 3, 4, 5].map((n) => ['bearer', address, n]))
    // Right token, same address: refused unchecked. Another address: fine.
    expect((await api(app, 'GET', '/api/rooms', { address })).status).toBe(429)
    expect((await api(app, 'GET', '/api/rooms', { address: '10.2.0.2' })).status).toBe(200)
    // Sign-in and bearer share the address's count.
    expect((await login(app, ALICE, { address })).status).toBe(429)
    // A signed-in browser session is not a token guess: it keeps working from that address.
    const session = await login(app, BOB, { address: '10.2.0.3' })
    const cookie = (session.res.headers.get('set-cookie') as string).split(';')[0] as string
    expect((await api(app, 'GET', '/api/rooms', { token: null, headers: { cookie }, address })).status).toBe(200)
    // After the lockout the right token works and clears the count.
    clock.advance(1000)
    expect((await api(app, 'GET', '/api/rooms', { address })).status).toBe(200)
    expect((await api(app, 'GET', '/api/rooms', { token: wrong(9), address })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ via: 'bearer', failures: 1 })
    expectNoTokens(lines, [ALICE, BOB, ...Array.from({ length: 10 }, (_, i) => wrong(i))])
  })

  it('counts IPv6 clients by their /64', async () => {
    const { app } = await loggedEdge()
    const statuses = []
    for (let i = 0; i < 5; i++) statuses.push((await login(app, wrong(i), { address: `2001:db8:1:2::${i + 1}` })).status)
    expect(statuses).toEqual([401, 401, 401, 401, 429])
    expect((await login(app, ALICE, { address: '2001:0db8:0001:0002:ffff::9' })).status).toBe(429)
    expect((await login(app, ALICE, { address: '2001:db8:1:3::1' })).status).toBe(200)
    // An IPv4 client seen through an IPv6 socket is that IPv4 address.
    for (let i = 0; i < 5; i++) await login(app, wrong(i), { address: '10.3.0.1' })
    expect((await login(app, ALICE, { address: '::ffff:10.3.0.1' })).status).toBe(429)
  })
})
