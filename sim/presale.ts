// `npm run simulate -- --presale N`: a sale with a presale lane (issue #31). An edge (Node, or the Worker
// in workerd) on a redis-server started here, a room that takes access codes; the admin API makes N
// codes of one use each for the presale's holders, and one invite link whose uses fewer people try
// than it has, plus a few more than it has. Public visitors and holders arrive together over the
// sale and poll /_anteroom/status as the queue page does (a holder's first request brings their code);
// the store's own admission record and active counts are read beside the edge. The verdicts
// (presale-verdicts.ts): each line in its arrival order, the priority lane before the public line, each
// line at its own cap and rate, no code or link used past its uses, everyone admitted.
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import type { Server } from 'node:http'
import { resolve } from 'node:path'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { Agent, request } from 'undici'
import { freePort } from '../scripts/lib/free-port.js'
import { startRedis } from '../scripts/lib/redis-server.js'
import { buildWorker, startWorker } from '../scripts/lib/worker.js'
import { connectRedis } from '../src/adapters/redis/connect.js'
import { roomKeys } from '../src/adapters/redis/keys.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { loadConfig } from '../src/config/index.js'
import { LANE_OFFSET_US, type Lane, laneRoomId } from '../src/core/access.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { buildEdge } from '../src/entry/build.js'
import type { RoomLimits } from './predict.js'
import {
  type ActiveSample,
  capVerdict,
  everyoneAdmittedVerdict,
  type Grant,
  type Line,
  orderVerdict,
  priorityFirstVerdict,
  rateVerdict,
  type Uses,
  usesVerdict,
} from './presale-verdicts.js'
import { rng, scaleLimits, tokenArrival } from './simulate.js'
import type { Verdict } from './verdicts.js'

export interface PresaleOptions {
  /** Public visitors. */
  visitors: number
  /** Presale holders with a code each (one use), besides those of the link. */
  holders: number
  /** The lane the codes and the link put their holders in. */
  lane: Lane
  /** An invite link of this many uses, tried by as many holders and `linkExtra` more. */
  linkUses: number
  linkExtra: number
  /** The public line's limits, sale time. */
  limits: RoomLimits
  /** The separate lane's cap and rate (sale time), for lane 'separate'. */
  laneActiveUsers: number
  laneUsersPerMinute: number
  /** Everyone arrives over this many sale seconds. */
  durationSeconds: number
  scale: number
  seed: number
  runtime?: 'node' | 'worker'
  /** A Redis to use; a redis-server is started here when unset. */
  redisUrl?: string
  maxRealSeconds?: number
  log?: (line: string) => void
}

export interface PresaleResult {
  options: Omit<PresaleOptions, 'log'>
  realSeconds: number
  requests: number
  /** Visitors by line, as the store granted them. */
  grants: Grant[]
  admitted: number
  everyone: number
  uses: Uses[]
  verdicts: Verdict[]
  ok: boolean
}

const ROOM = 'presale'
const ADMIN = randomBytes(24).toString('base64url')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

interface Stack {
  url: string
  stop(): Promise<void>
}

/** The edge (Node or the Worker) and an origin that answers 200, on loopback; the room takes codes. */
async function startStack(o: PresaleOptions, redisUrl: string, room: Record<string, unknown>): Promise<Stack> {
  const stops: (() => Promise<void>)[] = []
  const listen = async (fetch: (r: Request) => Response | Promise<Response>, port: number) => {
    const server = serve({ fetch, hostname: '127.0.0.1', port }) as Server
    await new Promise((r) => (server.listening ? r(null) : server.once('listening', r)))
    stops.push(() => new Promise((r) => server.close(() => r())))
  }
  const [edgePort, originPort] = [await freePort(), await freePort()]
  await listen(new Hono().all('*', (c) => c.text('the sale')).fetch, originPort)
  const vars = {
    ANTEROOM_ROOMS: JSON.stringify([room]),
    ANTEROOM_REDIS_URL: redisUrl,
    ANTEROOM_QUEUE_SECRET: randomBytes(32).toString('hex'),
    ANTEROOM_ADMIN_TOKENS: `sim:${ADMIN}`,
  }
  if (o.runtime === 'worker') {
    // A directory of this process's own: another run in the same checkout rebuilds its own, not this one's.
    const outdir = resolve(`.tmp/sim/presale-worker-${process.pid}`)
    stops.push(async () => rmSync(outdir, { recursive: true, force: true }))
    const script = await buildWorker('worker/index.ts', outdir)
    const worker = await startWorker({
      script,
      vars: {
        ...vars,
        ANTEROOM_ORIGIN: `http://127.0.0.1:${originPort}`,
        ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('sim')]),
      },
      port: edgePort,
    })
    stops.push(() => worker.close())
  } else {
    const edge = await buildEdge(loadConfig(vars), { originUrl: `http://127.0.0.1:${originPort}` })
    stops.push(() => edge.close())
    await listen(edge.app.fetch, edgePort)
  }
  return {
    url: `http://127.0.0.1:${edgePort}`,
    async stop() {
      for (const stop of stops.reverse()) await stop().catch(() => {})
    },
  }
}

/**
 * The visitor, lane and arrival an admission token names (its payload, unverified: the simulator only
 * reads what its own edge signed). `arr` is ms; a lane's arrival is put back in its band (core/access.ts).
 */
function admissionClaims(token: string | undefined): { visitor: string; arrival: number; lane?: Lane } | undefined {
  const payload = token?.split('.')[1]
  if (payload === undefined) return undefined
  const c = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub?: string; arr?: number; lane?: Lane }
  if (typeof c.sub !== 'string' || typeof c.arr !== 'number') return undefined
  return { visitor: c.sub, arrival: c.arr * 1000 - (c.lane === undefined ? 0 : LANE_OFFSET_US[c.lane]), lane: c.lane }
}

export async function simulatePresale(o: PresaleOptions): Promise<PresaleResult> {
  const log = o.log ?? (() => {})
  const { real } = scaleLimits(o.limits, o.scale)
  const laneRate = Math.max(1, Math.round(o.laneUsersPerMinute * o.scale))
  const redis = o.redisUrl === undefined ? await startRedis() : undefined
  const redisUrl = o.redisUrl ?? (redis?.url as string)
  const room = {
    id: ROOM,
    paths: ['/'],
    ...real,
    accessCodes: 'on',
    laneActiveUsers: o.lane === 'separate' ? o.laneActiveUsers : 0,
    laneUsersPerMinute: laneRate,
  }
  const stack = await startStack(o, redisUrl, room)
  const client = connectRedis(redisUrl)
  const store = new RedisQueueStore(client, luaScripts())
  const agent = new Agent({ connections: 64 })
  let requests = 0
  const call = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
    requests++
    const res = await request(`${stack.url}${path}`, {
      method: (init.method ?? 'GET') as 'GET',
      headers: init.headers,
      body: init.body,
      dispatcher: agent,
    })
    const setCookie = res.headers['set-cookie']
    return {
      status: res.statusCode,
      body: (await res.body.json().catch(() => undefined)) as Record<string, unknown> | undefined,
      setCookie,
    }
  }
  const admin = (path: string, body: unknown) =>
    call(`/_anteroom/api/rooms/${ROOM}/access/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  try {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
    const codes =
      o.holders > 0
        ? ((await admin('codes', { count: o.holders, maxUses: 1, lane: o.lane, expiresAt, label: 'presale' })).body?.codes as string[])
        : []
    const link =
      o.linkUses > 0
        ? ((await admin('links', { maxUses: o.linkUses, lane: o.lane, expiresAt, label: 'newsletter' })).body?.token as string)
        : undefined
    if (codes.length !== o.holders || (o.linkUses > 0 && link === undefined)) throw new Error('the admin API did not make the codes')
    // Who comes, and when: everyone in one shuffled stream over the sale's arrival window.
    const random = rng(o.seed)
    const people: { code?: string; label: string }[] = [
      ...Array.from({ length: o.visitors }, () => ({ label: 'public' })),
      ...codes.map((code) => ({ code, label: 'code' })),
      ...Array.from({ length: link === undefined ? 0 : o.linkUses + o.linkExtra }, () => ({ code: link, label: 'link' })),
    ]
    const plans = people.map((p) => ({ ...p, at: (random() * o.durationSeconds * 1000) / o.scale }))
    const t0 = performance.now()
    const now = () => performance.now() - t0
    const deadline = (o.maxRealSeconds ?? 300) * 1000
    const admitted = new Set<number>()
    const visitorOf = new Map<number, { visitor: string; arrival: number; lane?: Lane }>()
    /** When a holder's redemption was answered (wall ms): placed by then (presale-verdicts.ts Grant.placedBy). */
    const placedBy = new Map<number, number>()
    const uses: Uses[] = [
      ...codes.map((c) => ({ label: `code …${c.slice(-4)}`, maxUses: 1, redeemed: 0, refusedUsedUp: 0 })),
      ...(link === undefined ? [] : [{ label: 'the invite link', maxUses: o.linkUses, redeemed: 0, refusedUsedUp: 0 }]),
    ]
    const useOf = (p: { code?: string; label: string }) =>
      p.label === 'link' ? uses[uses.length - 1] : uses[codes.indexOf(p.code as string)]

    async function visit(i: number) {
      const p = plans[i] as (typeof plans)[number]
      await sleep(p.at - now())
      const cookies = new Map<string, string>()
      let code = p.code
      while (now() < deadline) {
        const path = `/_anteroom/status?room=${ROOM}${code === undefined ? '' : `&code=${encodeURIComponent(code)}`}`
        const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ')
        const r = await call(path, { headers: { accept: 'application/json', ...(cookie === '' ? {} : { cookie }) } })
        for (const line of [r.setCookie ?? []].flat()) {
          const [pair = ''] = line.split(';')
          const eq = pair.indexOf('=')
          if (/Max-Age=0/i.test(line)) cookies.delete(pair.slice(0, eq))
          else cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
        }
        if (code !== undefined) {
          const use = useOf(p)
          const error = (r.body?.error as { code?: string } | undefined)?.code
          if (use !== undefined && r.status === 200) {
            use.redeemed++
            placedBy.set(i, Date.now())
          }
          if (use !== undefined && error === 'ERR_ACCESS_USED_UP') use.refusedUsedUp++
          // Refused or not, the code is tried once: without a place in a lane, they queue as the public does.
          code = undefined
          if (r.status !== 200) continue
        }
        const token = cookies.get(`anteroom_q_${ROOM}`)
        const visitor = token === undefined ? undefined : decodeURIComponent(token).split('.')[2]
        const arrival = tokenArrival(token)
        const lane = r.body?.lane as Lane | undefined
        if (visitor !== undefined && arrival !== undefined) visitorOf.set(i, { visitor, arrival, lane })
        if (r.body?.state === 'admitted') {
          admitted.add(i)
          // Admitted on their first answer (the line was empty): who they are, from the admission.
          if (!visitorOf.has(i)) {
            const claims = admissionClaims(cookies.get(`anteroom_a_${ROOM}`))
            if (claims !== undefined) visitorOf.set(i, claims)
          }
          return
        }
        const next = typeof r.body?.nextPollSeconds === 'number' ? r.body.nextPollSeconds * 1000 : real.refreshSeconds * 1000
        await sleep(next * (0.98 + 0.04 * Math.random()))
      }
    }

    // The store's admission records (a minute each, read twice a second) and its active counts.
    const granted = new Map<string, { line: 'room' | 'separate'; at: number }>()
    const samples: ActiveSample[] = []
    let watching = true
    const watcher = (async () => {
      while (watching) {
        for (const [line, id] of [
          ['room', ROOM],
          ['separate', laneRoomId(ROOM)],
        ] as const) {
          try {
            const flat = await client.zrange(roomKeys(id).admissions, '0', '-1', 'WITHSCORES')
            for (let k = 0; k + 1 < flat.length; k += 2) {
              const visitor = (flat[k] as string).replace(/:\d+$/, '')
              if (!granted.has(visitor)) granted.set(visitor, { line, at: Number(flat[k + 1]) })
            }
            samples.push({ t: now(), line, active: (await store.stats(id)).active })
          } catch {
            // A missed sample is only a gap.
          }
        }
        await sleep(250)
      }
    })()
    log(
      `presale: ${o.visitors} public visitors, ${o.holders} codes and a link of ${o.linkUses} uses (tried by ${o.linkUses + o.linkExtra}), the ${o.lane} lane, ${o.scale}x`,
    )
    await Promise.all(plans.map((_, i) => visit(i)))
    await sleep(600)
    watching = false
    await watcher
    const grants: Grant[] = []
    for (const [i, v] of visitorOf) {
      const g = granted.get(v.visitor)
      if (g === undefined || !admitted.has(i)) continue
      const line: Line = g.line === 'separate' ? 'separate' : (v.lane ?? 'public')
      const placed = placedBy.get(i)
      grants.push({ visitor: v.visitor, line, arrival: v.arrival, at: g.at, ...(placed === undefined ? {} : { placedBy: placed }) })
    }
    const verdicts: Verdict[] = [
      orderVerdict(grants, 'public'),
      orderVerdict(grants, o.lane),
      ...(o.lane === 'priority' ? [priorityFirstVerdict(grants)] : []),
      capVerdict(samples, 'room', real.totalActiveUsers),
      rateVerdict(grants, 'room', real.newUsersPerMinute),
      ...(o.lane === 'separate' ? [capVerdict(samples, 'separate', o.laneActiveUsers), rateVerdict(grants, 'separate', laneRate)] : []),
      usesVerdict(uses),
      everyoneAdmittedVerdict(admitted.size, plans.length),
    ]
    return {
      options: withoutLog(o),
      realSeconds: now() / 1000,
      requests,
      grants,
      admitted: admitted.size,
      everyone: plans.length,
      uses,
      verdicts,
      ok: verdicts.every((v) => v.ok || v.info),
    }
  } finally {
    await agent.close()
    client.disconnect()
    await stack.stop()
    await redis?.stop()
  }
}

function withoutLog(o: PresaleOptions): Omit<PresaleOptions, 'log'> {
  const { log: _log, ...rest } = o
  return rest
}

/** The presale's report: its verdicts, and how many each line admitted. */
export function renderPresaleReport(r: PresaleResult): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
  const by = (line: Line) => r.grants.filter((g) => g.line === line).length
  const rows = r.verdicts
    .map(
      (v) =>
        `<tr><td>${v.ok ? 'pass' : 'FAIL'}</td><td>${esc(v.name)}</td><td>${esc(v.measured)}</td><td>${esc(v.limit)}</td><td>${esc(v.detail)}</td></tr>`,
    )
    .join('\n')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Presale simulation</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:70rem}td,th{padding:.3rem .6rem;border-bottom:1px solid #ddd;text-align:left}</style></head>
<body><h1>Presale: ${r.ok ? 'every verdict passed' : 'a verdict failed'}</h1>
<p>${r.everyone} visitors (${r.options.visitors} public, ${r.options.holders} codes, a link of ${r.options.linkUses} uses tried by ${r.options.linkUses + r.options.linkExtra}), the ${r.options.lane} lane, ${r.options.runtime ?? 'node'} edge, ${r.options.scale}x, ${r.realSeconds.toFixed(1)} real s, ${r.requests} requests.
Admitted: ${by('public')} from the public line, ${by('priority')} from the priority lane, ${by('separate')} from the separate lane.</p>
<table><thead><tr><th></th><th>verdict</th><th>measured</th><th>limit</th><th>detail</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`
}
