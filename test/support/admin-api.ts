// What the admin API tests share: an echo origin, edges on the test Redis (two sharing a room, or one on a database of its own with its log captured), and the API and sign-in calls with their client addresses.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, inject } from 'vitest'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import type { Edge } from '../../src/entry/build.js'
import { ManualClock } from './clock.js'
import { testEdge } from './edge.js'
import { type OriginServer, startOrigin } from './origin-server.js'

export const T0 = 1_800_000_000_000
export const ALICE = 'alice-token-0123456789abcdefgh'
export const BOB = 'bob-token-0123456789abcdefghijk'
export let origin: OriginServer
export const built: Edge[] = []

/** Starts the echo origin for the calling test file, and closes it and every edge built there afterwards. */
export function useAdminEdges(): void {
  beforeAll(async () => {
    origin = await startOrigin()
  })
  afterAll(async () => {
    for (const e of built) await e.close()
    await origin.close()
  })
}

export async function edges(count = 2, room: Record<string, unknown> = {}) {
  const id = `adm-${Date.now().toString(36)}-${built.length}`
  const clock = new ManualClock(T0)
  const signingKeys = [await generateSigningJwk('k')]
  const list: Edge[] = []
  for (let i = 0; i < count; i++) {
    list.push(
      await testEdge({
        rooms: [{ id, paths: ['/'], totalActiveUsers: 3, newUsersPerMinute: 6, sessionDurationSeconds: 60, ...room }],
        originUrl: origin.url,
        redisUrl: inject('redisUrl'),
        clock,
        signingKeys,
        adminTokens: `alice:${ALICE},bob:${BOB}`,
      }),
    )
  }
  built.push(...list)
  return { id, clock, edges: list, app: (list[0] as Edge).app }
}

export type App = Edge['app']

/**
 * A client address for a request driven in-process: app.request's env stands in for the Node
 * socket that @hono/node-server would hand over, which is where the edge reads the address.
 */
export const from = (address: string) => ({ incoming: { socket: { remoteAddress: address } } })
let addresses = 0
/** A client address no other request of this file has used, so that failures in one test never lock another. */
export function newAddress(): string {
  const n = ++addresses
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
}

export async function api(
  app: App,
  method: string,
  path: string,
  o: { token?: string | null; body?: unknown; headers?: Record<string, string>; address?: string } = {},
) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token !== null) headers.authorization = `Bearer ${o.token ?? ALICE}`
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const init = {
    method,
    headers,
    body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
  }
  const res = await app.request(`http://shop.test/_anteroom${path}`, init, from(o.address ?? newAddress()))
  const text = await res.text()
  // biome-ignore lint/suspicious/noExplicitAny: responses are read field by field
  return { status: res.status, headers: res.headers, text, body: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> }
}

/** POST /admin/login from a client address, with an account name when given. */
export async function login(app: App, token: string, o: { address?: string; name?: unknown } = {}) {
  const res = await app.request(
    'http://shop.test/_anteroom/admin/login',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(o.name === undefined ? { token } : { name: o.name, token }),
    },
    from(o.address ?? newAddress()),
  )
  return {
    res,
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as { who?: string; csrf?: string; error?: { code: string; message: string; field?: string } },
  }
}

export type LogLine = { event: string; fields: Record<string, unknown> }

/** An edge on a fresh database of the test Redis, with its log captured. */
export async function loggedEdge(room: Record<string, unknown> = {}) {
  const counter = new Redis(inject('redisUrl'))
  const db = await counter.incr('anteroom-test:next-db')
  counter.disconnect()
  const lines: LogLine[] = []
  const clock = new ManualClock(T0)
  const id = `thr-${db}`
  const edge = await testEdge({
    rooms: [{ id, paths: ['/'], totalActiveUsers: 3, newUsersPerMinute: 60, sessionDurationSeconds: 60, ...room }],
    originUrl: origin.url,
    redisUrl: `${inject('redisUrl')}/${db}`,
    clock,
    adminTokens: `alice:${ALICE},bob:${BOB}`,
    log: (event, fields) => lines.push({ event, fields }),
  })
  built.push(edge)
  const failures = () => lines.filter((l) => l.event === 'admin_signin_failed').map((l) => l.fields)
  return { app: edge.app, clock, id, lines, failures }
}

export const wrong = (i: number) => `wrong-token-${i}-0123456789abcdefgh`

/** The log holds none of the tokens tried, right or wrong, whole or in part. */
export function expectNoTokens(lines: LogLine[], tokens: string[]) {
  const text = JSON.stringify(lines)
  for (const t of tokens) {
    expect(text).not.toContain(t)
    expect(text).not.toContain(t.slice(0, 12))
  }
}
