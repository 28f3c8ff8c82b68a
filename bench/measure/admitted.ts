// Measurement 2: a request of an admitted visitor, proxied to the origin: the edge checks the admission
// cookie (ES256, cached) and forwards, with no store call.
//   Baseline: a bare pass-through proxy (bench/proxy.ts: Hono and an undici Pool, no waiting-room logic)
//   in front of the same origin, and, for information, the origin itself.
//   Target: at least 0.85 of the bare proxy's rate. The edge and the bare proxy each run in two
//   processes that take turns (Target.alternate); the second edge verifies the cookie once.
// Then a burst: BURST visitors admitted a moment ago by the edge (JSON polls) send their first request
// with their new admission cookie, all at once (one connection each, opened beforehand). The edge
// signed those tokens, so it knows them without an ES256 verification; a second edge with the same
// signing key, which did not sign them, verifies each (what the first would pay without knowing them).
//   Baseline: the same burst through the bare proxy. Information: the p99 latencies, the median of
//   BURST_ROUNDS rounds (each with fresh admissions, the order turned round each time).
// The Redis commands of the admitted requests are counted here and read by measurement 4 (redis-calls.ts).
import { median } from '../../scripts/lib/stats.js'
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import { admissionCookieName, queueCookieName } from '../../src/http/cookies.js'
import { ACCEPT_JSON, type EdgeBench, get, parseJson, startEdge, startServer } from '../edge.js'
import {
  type Aggregate,
  burst,
  compare,
  fmtInt,
  fmtMs,
  fmtRps,
  log,
  type MonitorSample,
  monitorSample,
  onTwoProcesses,
  type Row,
  ratioRow,
  sleep,
  type Target,
} from '../lib.js'
import { OPEN_ROOM } from '../line.js'
import { MONITOR_SAMPLE } from './redis-calls.js'

const TARGET = { op: '>=', value: 0.85 } as const
/** Fresh admissions per burst, and bursts per target. */
const BURST = 2000
const BURST_ROUNDS = 3

export interface Admitted {
  rows: Row[]
  notes: string[]
  runs: Aggregate[]
  /** The edge's admitted requests (Redis commands counted over their segments) and a MONITOR sample. */
  admitted: Aggregate
  monitor: MonitorSample
}

export async function measureAdmitted(b: EdgeBench): Promise<Admitted> {
  await b.redis.flushall()
  const proxy = await startServer(b, 'bare proxy', 'bench/proxy.ts', { BENCH_ORIGIN: b.origin.url })
  // One signing key for both edges: the second verifies what the first signed.
  const keys = { ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('bench')]) }
  const edge = await startEdge(b, 'edge (open room)', [OPEN_ROOM], keys)
  const proxy2 = await startServer(b, 'bare proxy (second process)', 'bench/proxy.ts', { BENCH_ORIGIN: b.origin.url })
  const edge2 = await startEdge(b, 'edge (open room, second process)', [OPEN_ROOM], keys)
  let other: Awaited<ReturnType<typeof startEdge>> | undefined
  try {
    const first = await get(`${edge.url}/`, { accept: ACCEPT_JSON })
    const admissionPrefix = `${admissionCookieName(OPEN_ROOM.id)}=`
    const admission = first.setCookies.find((c) => c.startsWith(admissionPrefix))?.split(';')[0]
    if (admission === undefined || parseJson(first.text).state !== 'admitted') {
      throw new Error(`the first poll in ${OPEN_ROOM.id} did not admit: ${first.status} ${first.text} ${first.setCookies.join(' | ')}`)
    }
    const direct = await get(`${b.origin.url}/`, { cookie: admission })
    for (const e of [edge, edge2]) {
      const through = await get(`${e.url}/`, { cookie: admission })
      if (through.status !== 200 || through.text !== direct.text)
        throw new Error(`admitted request not proxied by ${e.name}: ${through.status} ${through.text}`)
    }
    const headers = { cookie: admission }
    const origin = b.origin
    const originTarget: Target = { name: 'origin direct', url: `${origin.url}/`, headers, pids: { origin: origin.pid } }
    const proxyTarget = onTwoProcesses(
      { name: 'bare proxy', url: `${proxy.url}/`, headers, pids: { proxy: proxy.pid, origin: origin.pid } },
      proxy2,
    )
    const edgeTarget = onTwoProcesses(
      {
        name: 'edge, admitted',
        url: `${edge.url}/`,
        headers,
        countRedis: true,
        pids: { edge: edge.pid, origin: origin.pid, redis: b.redisServer.pid },
      },
      edge2,
    )
    const m = await compare([originTarget, proxyTarget, edgeTarget], { redis: b.redis })
    const originAgg = m.get(originTarget.name) as Aggregate
    const proxyAgg = m.get(proxyTarget.name) as Aggregate
    const admittedAgg = m.get(edgeTarget.name) as Aggregate

    log('MONITOR sample: sequential admitted requests')
    const monitor = await monitorSample(b.redis, MONITOR_SAMPLE, async () => {
      await get(`${edge.url}/`, headers)
    })

    other = await startEdge(b, 'edge (same key, did not sign)', [OPEN_ROOM], keys)
    const bursts = { proxy: [] as Aggregate[], edge: [] as Aggregate[], other: [] as Aggregate[] }
    const held: string[] = []
    for (let round = 0; round < BURST_ROUNDS; round++) {
      const { cookies, heldMs } = await admitFresh(edge.url, admissionPrefix, BURST)
      if (heldMs > 5000) held.push(`round ${round + 1}: ${(heldMs / 1000).toFixed(0)} s`)
      const targets = [
        ['proxy', { name: 'burst via bare proxy', url: `${proxy.url}/`, headers: {}, cookies, pids: { proxy: proxy.pid } }],
        ['edge', { name: 'burst via edge (signed here)', url: `${edge.url}/`, headers: {}, cookies, pids: { edge: edge.pid } }],
        ['other', { name: 'burst via edge (signed elsewhere)', url: `${other.url}/`, headers: {}, cookies, pids: { edge: other.pid } }],
      ] as const
      for (const [key, t] of round % 2 === 0 ? targets : [...targets].reverse()) {
        log(`burst of ${fmtInt(BURST)} first requests, round ${round + 1}: ${t.name}`)
        const a = await burst(t, BURST)
        if (a.non2xx > 0 || a.errors > 0)
          throw new Error(`${t.name}: ${a.non2xx} non-2xx, ${a.errors} errors ${JSON.stringify(a.statuses)}`)
        bursts[key].push(a)
      }
    }
    // An edge reports an outage with its polls after a store call failed; the store notes the latest.
    const outage = Number((await b.redis.hget(roomKeys(OPEN_ROOM.id).life, 'outage')) ?? 0)
    const p99 = (runs: Aggregate[]) => median(runs.map((a) => a.latencyMs.p99))
    const usPer = (runs: Aggregate[], pid: string) => median(runs.map((a) => a.cpu[pid]?.usPerRequest ?? Number.NaN))
    const burstNote =
      `burst of ${fmtInt(BURST)} freshly admitted visitors' first requests (one connection each, all sent at once; medians of ${BURST_ROUNDS} rounds): ` +
      `p99 ${fmtMs(p99(bursts.edge))} via the edge that signed their tokens (${usPer(bursts.edge, 'edge').toFixed(0)} µs of edge CPU per request), ` +
      `${fmtMs(p99(bursts.other))} via an edge that verifies them (${usPer(bursts.other, 'edge').toFixed(0)} µs), ` +
      `${fmtMs(p99(bursts.proxy))} via the bare proxy (${usPer(bursts.proxy, 'proxy').toFixed(0)} µs); p50 ${fmtMs(median(bursts.edge.map((a) => a.latencyMs.p50)))}, ` +
      `${fmtMs(median(bursts.other.map((a) => a.latencyMs.p50)))}, ${fmtMs(median(bursts.proxy.map((a) => a.latencyMs.p50)))}` +
      (held.length === 0 && outage === 0
        ? ''
        : `. Admissions waited in line before ${held.length === 0 ? 'none of the rounds' : held.join(', ')}; ` +
          (outage > 0
            ? `an edge reported a store outage (at ${new Date(outage).toISOString()}, during the bursts: a store call timed out while its event loop was busy), and the store held the line for 1.5 refreshes after it`
            : 'no edge reported an outage'))
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
        ratioRow(
          'burst_fresh_p99_vs_bare_proxy',
          `2. burst of ${fmtInt(BURST)} fresh admissions, p99 via edge`,
          p99(bursts.edge),
          p99(bursts.proxy),
          'bare proxy',
          fmtMs,
          'info',
        ),
        ratioRow(
          'burst_other_edge_p99_vs_bare_proxy',
          '2. the same, tokens signed by another edge (info)',
          p99(bursts.other),
          p99(bursts.proxy),
          'bare proxy',
          fmtMs,
          'info',
        ),
      ],
      notes: [burstNote],
      runs: [originAgg, proxyAgg, admittedAgg],
      admitted: admittedAgg,
      monitor,
    }
  } finally {
    await other?.stop()
    await edge2.stop()
    await edge.stop()
    await proxy2.stop()
    await proxy.stop()
  }
}

/**
 * Admits n new visitors through the edge (JSON polls without cookies, 50 at a time); their admission
 * cookies, and how long the slowest of them waited in line. In this room everybody is let in at once,
 * unless the line is held: after a burst, a store call of the edge can have timed out while its event
 * loop was busy, and the store then holds the line for 1.5 refreshes (holdLine, docs/architecture.md).
 * A visitor who is queued polls again, as one would, until admitted. Measurement 7 (crowd.ts) admits its
 * crowd through its own edge this way, in its room.
 */
export async function admitFresh(
  url: string,
  prefix: string,
  n: number,
  room: string = OPEN_ROOM.id,
): Promise<{ cookies: string[]; heldMs: number }> {
  const out: string[] = []
  const queuePrefix = `${queueCookieName(room)}=`
  let heldMs = 0
  let next = 0
  const worker = async () => {
    while (next < n) {
      next++
      const started = Date.now()
      let r = await get(`${url}/`, { accept: ACCEPT_JSON })
      for (;;) {
        const cookie = r.setCookies.find((c) => c.startsWith(prefix))?.split(';')[0]
        if (cookie !== undefined) {
          out.push(cookie)
          heldMs = Math.max(heldMs, Date.now() - started)
          break
        }
        const place = r.setCookies.find((c) => c.startsWith(queuePrefix))?.split(';')[0]
        if (place === undefined || parseJson(r.text).state !== 'queued' || Date.now() - started > 120_000)
          throw new Error(`a fresh poll was not admitted: ${r.status} ${r.text}`)
        await sleep(500)
        r = await get(`${url}/`, { accept: ACCEPT_JSON, cookie: place })
      }
    }
  }
  await Promise.all(Array.from({ length: 50 }, worker))
  return { cookies: out, heldMs }
}
