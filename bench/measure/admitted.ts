// Measurement 2: a request of an admitted visitor, proxied to the origin: the edge checks the admission
// cookie (ES256, cached) and forwards, with no store call.
//   Baseline: a bare pass-through proxy (bench/proxy.ts: Hono and an undici Pool, no waiting-room logic)
//   in front of the same origin, and, for information, the origin itself.
//   Target: at least 0.85 of the bare proxy's rate.
// The Redis commands of the admitted requests are counted here and read by measurement 4 (redis-calls.ts).
import { admissionCookieName } from '../../src/http/cookies.js'
import { ACCEPT_JSON, type EdgeBench, get, parseJson, startEdge, startServer } from '../edge.js'
import { type Aggregate, compare, fmtRps, log, type MonitorSample, monitorSample, type Row, ratioRow, type Target } from '../lib.js'
import { MONITOR_SAMPLE } from './redis-calls.js'

const TARGET = { op: '>=', value: 0.85 } as const
/** The first poll admits, and a one-hour session is not renewed during the bench. */
const OPEN_ROOM = {
  id: 'open',
  paths: ['/'],
  mode: 'fifo',
  totalActiveUsers: 10_000_000,
  newUsersPerMinute: 6_000_000,
  sessionDurationSeconds: 3600,
  refreshSeconds: 20,
  abandonAfterSeconds: 3600,
}

export interface Admitted {
  rows: Row[]
  runs: Aggregate[]
  /** The edge's admitted requests (Redis commands counted over their segments) and a MONITOR sample. */
  admitted: Aggregate
  monitor: MonitorSample
}

export async function measureAdmitted(b: EdgeBench): Promise<Admitted> {
  await b.redis.flushall()
  const proxy = await startServer(b, 'bare proxy', 'bench/proxy.ts', { BENCH_ORIGIN: b.origin.url })
  const edge = await startEdge(b, 'edge (open room)', [OPEN_ROOM])
  try {
    const first = await get(`${edge.url}/`, { accept: ACCEPT_JSON })
    const admissionPrefix = `${admissionCookieName(OPEN_ROOM.id)}=`
    const admission = first.setCookies.find((c) => c.startsWith(admissionPrefix))?.split(';')[0]
    if (admission === undefined || parseJson(first.text).state !== 'admitted') {
      throw new Error(`the first poll in ${OPEN_ROOM.id} did not admit: ${first.status} ${first.text} ${first.setCookies.join(' | ')}`)
    }
    const through = await get(`${edge.url}/`, { cookie: admission })
    const direct = await get(`${b.origin.url}/`, { cookie: admission })
    if (through.status !== 200 || through.text !== direct.text)
      throw new Error(`admitted request not proxied: ${through.status} ${through.text}`)
    const headers = { cookie: admission }
    const origin = b.origin
    const originTarget: Target = { name: 'origin direct', url: `${origin.url}/`, headers, pids: { origin: origin.pid } }
    const proxyTarget: Target = { name: 'bare proxy', url: `${proxy.url}/`, headers, pids: { proxy: proxy.pid, origin: origin.pid } }
    const edgeTarget: Target = {
      name: 'edge, admitted',
      url: `${edge.url}/`,
      headers,
      countRedis: true,
      pids: { edge: edge.pid, origin: origin.pid, redis: b.redisServer.pid },
    }
    const m = await compare([originTarget, proxyTarget, edgeTarget], { redis: b.redis })
    const originAgg = m.get(originTarget.name) as Aggregate
    const proxyAgg = m.get(proxyTarget.name) as Aggregate
    const admittedAgg = m.get(edgeTarget.name) as Aggregate

    log('MONITOR sample: sequential admitted requests')
    const monitor = await monitorSample(b.redis, MONITOR_SAMPLE, async () => {
      await get(`${edge.url}/`, headers)
    })
    return {
      rows: [
        ratioRow('admitted_vs_bare_proxy', '2. admitted request via edge', admittedAgg.rps, proxyAgg.rps, 'bare proxy', fmtRps, TARGET, {
          value: admittedAgg,
          baseline: proxyAgg,
        }),
        ratioRow(
          'admitted_vs_origin',
          '2. admitted request via edge (info)',
          admittedAgg.rps,
          originAgg.rps,
          'origin',
          fmtRps,
          'info, ~0.2 expected',
          { value: admittedAgg, baseline: originAgg },
        ),
      ],
      runs: [originAgg, proxyAgg, admittedAgg],
      admitted: admittedAgg,
      monitor,
    }
  } finally {
    await edge.stop()
    await proxy.stop()
  }
}
