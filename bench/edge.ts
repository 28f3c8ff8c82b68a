// The Node edges that measurements 1 to 5 run against: what they share (one redis-server, one origin),
// how an edge and the other servers are started, and the requests that check an edge answers as expected.
import type { Redis } from 'ioredis'
import { freePort } from '../scripts/lib/free-port.js'
import type { RedisServer } from '../scripts/lib/redis-server.js'
import { type Child, startChild } from './lib.js'
import { BENCH_SECRET } from './line.js'

export const ACCEPT_JSON = 'application/json'
export const ACCEPT_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

/** What the edge measurements share, started and stopped by bench/run.ts. */
export interface EdgeBench {
  redisServer: RedisServer
  /** The bench's own client: seeding lines, counting commands, reading memory. */
  redis: Redis
  /** The origin behind every edge (bench/origin.ts). */
  origin: Child
  /** Set with BENCH_PROFILE=1: every server runs under the CPU profiler, writing here. */
  profileDir: string | undefined
}

/** Starts one of the bench's own servers (a .ts file taking BENCH_PORT) on a free port. */
export async function startServer(b: Pick<EdgeBench, 'profileDir'>, name: string, script: string, env: Record<string, string> = {}) {
  const port = await freePort()
  return startChild({ name, script, port, env: { BENCH_PORT: String(port), ...env }, readyPath: '/', profileDir: b.profileDir })
}

/** Starts `npm start`'s entry point (src/entry/node.ts) on the bench's Redis, in front of its origin, with these rooms. */
export async function startEdge(
  b: { origin: { url: string }; redisServer: { url: string }; profileDir: string | undefined },
  name: string,
  rooms: object[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Child> {
  const port = await freePort()
  return startChild({
    name,
    script: 'src/entry/node.ts',
    port,
    env: {
      ANTEROOM_HOST: '127.0.0.1',
      ANTEROOM_PORT: String(port),
      ANTEROOM_ORIGIN: b.origin.url,
      ANTEROOM_REDIS_URL: b.redisServer.url,
      ANTEROOM_QUEUE_SECRET: BENCH_SECRET,
      // The admin chart's background sampler (one call per room per 10 s) is off, so that the
      // per-request counts of measurement 4 count only what requests cost.
      ANTEROOM_HISTORY_SAMPLE_SECONDS: '0',
      ANTEROOM_ROOMS: JSON.stringify(rooms),
      ...env,
    },
    readyPath: '/_anteroom/health',
    profileDir: b.profileDir,
    nodeArgs,
  })
}

export async function get(url: string, headers: Record<string, string>): Promise<{ status: number; text: string; setCookies: string[] }> {
  const res = await fetch(url, { headers, redirect: 'manual' })
  return { status: res.status, text: await res.text(), setCookies: res.headers.getSetCookie() }
}

export function parseJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    throw new Error(`expected JSON, got: ${text.slice(0, 200)}`)
  }
}

/**
 * A room's first poll, without a queue token, so that the store begins the room's life as a new room's:
 * a room whose first poll brings a token counts as forgotten, and admits nobody while it recovers
 * (state 'recovering'), and the bench's visitors all bring tokens. The poller joins the line.
 */
export async function openRoom(url: string): Promise<void> {
  const r = await get(url, { accept: ACCEPT_JSON })
  if (r.status !== 200 || parseJson(r.text).state !== 'queued')
    throw new Error(`the first poll at ${url} was not queued: ${r.status} ${r.text}`)
}

/** Expects a queued JSON poll with `waiting` in line; returns its body. */
export async function expectQueued(url: string, cookie: string, waiting: number): Promise<Record<string, unknown>> {
  const r = await get(url, { accept: ACCEPT_JSON, cookie })
  const body = parseJson(r.text)
  if (r.status !== 200 || body.state !== 'queued') throw new Error(`expected a queued poll from ${url}, got ${r.status} ${r.text}`)
  if (body.waiting !== waiting) throw new Error(`expected ${waiting} waiting at ${url}, got ${r.text}`)
  return body
}
