// The whole flow as `npm start` wires it: a visitor goes through the edge, is admitted, and books
// on the booking origin, which checks admissions against the edge's JWKS URL over HTTP.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { buildBooking } from '../src/entry/booking.js'
import type { Edge } from '../src/entry/build.js'
import { cookieFetch } from './support/cookie-fetch.js'
import { testEdge } from './support/edge.js'
import { freePort } from './support/redis-server.js'
import { type Served, serveOnFreePort } from './support/serve.js'

let edge: Edge
let booking: Awaited<ReturnType<typeof buildBooking>>
let edgeUrl: string
let originUrl: string
const servers: Served[] = []

beforeAll(async () => {
  const [edgePort, originPort] = [await freePort(), await freePort()]
  edgeUrl = `http://127.0.0.1:${edgePort}`
  originUrl = `http://127.0.0.1:${originPort}`
  booking = await buildBooking({
    databaseUrl: inject('postgresUrl'),
    jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
    issuer: 'anteroom',
    audience: 'origin',
    room: 'demo',
  })
  edge = await testEdge({ rooms: [{ id: 'demo', paths: ['/'], totalActiveUsers: 100, newUsersPerMinute: 600 }], originUrl })
  // Each knows the other's URL before it starts: the ports are picked first.
  servers.push(await serveOnFreePort(booking.app.fetch, { port: originPort }))
  servers.push(await serveOnFreePort(edge.app.fetch, { port: edgePort }))
})
afterAll(async () => {
  for (const s of servers) await s.close()
  await edge.close()
  await booking.close()
})

/** fetch with a cookie jar, like a browser, at the edge. */
const browser = () => cookieFetch(() => edgeUrl)

describe('edge in front of the booking origin', () => {
  it('a visitor is admitted, sees the seat map, holds, pays, and the invariant holds', async () => {
    const go = browser()
    const page = await go('/', { headers: { accept: 'text/html' } })
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('Pick up to 4 seats')
    const map = await go('/events/demo/seats')
    expect(map.status).toBe(200)
    const free = ((await map.json()) as { seats: { seat: string; status: string }[] }).seats.filter((s) => s.status === 'free')
    const wanted = free.slice(0, 2).map((s) => s.seat)
    const hold = await go('/events/demo/holds', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seats: wanted }),
    })
    expect(hold.status).toBe(201)
    const { hold: h } = (await hold.json()) as { hold: { id: string } }
    const paid = await go(`/holds/${h.id}/confirm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `flow-${h.id}` },
    })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toMatchObject({ booked: true, tickets: wanted.map((seat) => ({ seat })) })
    const invariant = (await (await go('/events/demo/invariant')).json()) as { ok: boolean; sold: number }
    expect(invariant.ok).toBe(true)
    expect(invariant.sold).toBeGreaterThanOrEqual(2)
  })

  it('through the edge, a form-encoded or text/plain post is a 415 and an oversized body a 413', async () => {
    const go = browser()
    expect((await go('/events/demo/seats')).status).toBe(200)
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'seats=A9'],
      ['text/plain', '{"seats": ["A9"]}'],
    ]) {
      const res = await go('/events/demo/holds', { method: 'POST', headers: { 'content-type': type as string }, body })
      expect(res.status, type).toBe(415)
      expect(await res.json()).toMatchObject({ error: { code: 'ERR_UNSUPPORTED_MEDIA_TYPE' } })
    }
    const big = await go('/events/demo/holds', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seats: Array.from({ length: 10_000 }, (_, i) => `A${i}`) }),
    })
    expect(big.status).toBe(413)
    expect(await big.json()).toMatchObject({ error: { code: 'ERR_BODY_TOO_LARGE' } })
    const seats = (await (await go('/events/demo/seats')).json()) as { seats: { seat: string; status: string }[] }
    expect(seats.seats.find((s) => s.seat === 'A9')?.status).toBe('free')
  })

  it('the origin itself refuses requests that did not come through the waiting room', async () => {
    const direct = await fetch(`${originUrl}/events/demo/seats`)
    expect(direct.status).toBe(401)
    expect(await direct.json()).toMatchObject({ error: { code: 'ERR_ADMISSION_MISSING' } })
    const forged = await fetch(`${originUrl}/events/demo/seats`, {
      headers: { 'anteroom-admission': 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' },
    })
    expect(forged.status).toBe(401)
  })
})
