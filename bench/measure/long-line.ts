// Measurement 3: a poll costs the same whether 1,000 or 1,000,000 visitors wait (nothing in the poll
// script walks the line; docs/redis-keys.md).
//   Baseline: polls of a room with 1,000 waiting, on the same edge, in the same run; and, as in
//   measurement 1, a bare Hono hello-world sent the same requests.
//   Target: with 1,000,000 waiting, at least 0.85 of the throughput, and a p99 latency at most 1.2 times;
//   with either line, at least half the hello-world's rate. The edge and the hello-world each run in
//   two processes that take turns (Target.alternate); both lines are polled on the same process in a
//   turn.
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { ACCEPT_JSON, type EdgeBench, expectQueued, openRoom, startEdge, startServer } from '../edge.js'
import { type Aggregate, compare, fmtInt, fmtMs, fmtRps, log, onTwoProcesses, type Row, ratioRow, type Target } from '../lib.js'
import { DAY_MS, fillLine, holdTheSlot, QUEUE_ROOM } from '../line.js'

const THROUGHPUT_TARGET = { op: '>=', value: 0.85 } as const
const P99_TARGET = { op: '<=', value: 1.2 } as const
const HELLO_TARGET = { op: '>=', value: 0.5 } as const
const SMALL_ROOM = { ...QUEUE_ROOM, id: 'k1', paths: ['/k1'] }
const BIG_ROOM = { ...QUEUE_ROOM, id: 'm1', paths: ['/m1'] }
const SMALL_LINE = 1_000
const BIG_LINE = 1_000_000
/** Visitors of the big line who poll (with cookies spread evenly over it). */
const BIG_TOKENS = 20_000

export interface LongLine {
  rows: Row[]
  runs: Aggregate[]
  warnings: string[]
}

export async function measureLongLine(b: EdgeBench): Promise<LongLine> {
  const warnings: string[] = []
  await b.redis.flushall()
  const hello = await startServer(b, 'hello', 'bench/hello.ts')
  const edge = await startEdge(b, 'edge (long and short line)', [SMALL_ROOM, BIG_ROOM])
  const hello2 = await startServer(b, 'hello (measurement 3, second process)', 'bench/hello.ts')
  const edge2 = await startEdge(b, 'edge (long and short line, second process)', [SMALL_ROOM, BIG_ROOM])
  try {
    for (const room of [SMALL_ROOM, BIG_ROOM]) {
      await holdTheSlot(b.redis, room.id)
      await openRoom(`${edge.url}${room.paths[0]}`)
    }
    log(`filling ${SMALL_ROOM.id} with ${fmtInt(SMALL_LINE)} and ${BIG_ROOM.id} with ${fmtInt(BIG_LINE)} visitors`)
    const fillStarted = Date.now()
    const far = Date.now() + 30 * DAY_MS
    const smallCookies = await fillLine(b.redis, SMALL_ROOM, SMALL_LINE, SMALL_LINE, far)
    const bigCookies = await fillLine(b.redis, BIG_ROOM, BIG_LINE, BIG_TOKENS, far)
    log(`filled in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s`)
    // Each line: those filled in, and behind them (by arrival) the one who opened the room.
    await expectQueued(`${edge.url}/k1`, smallCookies[0] as string, SMALL_LINE + 1)
    await expectQueued(`${edge.url}/m1`, bigCookies[0] as string, BIG_LINE + 1)
    await expectQueued(`${edge2.url}/m1`, bigCookies[0] as string, BIG_LINE + 1)
    const pids = { edge: edge.pid, redis: b.redisServer.pid }
    const line = (name: string, path: string, cookies: string[]): Target =>
      onTwoProcesses({ name, url: `${edge.url}${path}`, headers: { accept: ACCEPT_JSON }, cookies, pids }, edge2)
    const small = line(`edge poll, ${fmtInt(SMALL_LINE)} waiting`, '/k1', smallCookies)
    const big = line(`edge poll, ${fmtInt(BIG_LINE)} waiting`, '/m1', bigCookies)
    const helloTarget = onTwoProcesses(
      {
        name: 'hello (measurement 3)',
        url: `${hello.url}/`,
        headers: { accept: ACCEPT_JSON },
        cookies: smallCookies,
        pids: { hello: hello.pid },
      },
      hello2,
    )
    const m = await compare([helloTarget, small, big])
    const helloAgg = m.get(helloTarget.name) as Aggregate
    const smallAgg = m.get(small.name) as Aggregate
    const bigAgg = m.get(big.name) as Aggregate
    const [smallAfter, bigAfter] = await Promise.all([
      b.redis.zcard(roomKeys(SMALL_ROOM.id).line),
      b.redis.zcard(roomKeys(BIG_ROOM.id).line),
    ])
    if (smallAfter !== SMALL_LINE + 1 || bigAfter !== BIG_LINE + 1)
      warnings.push(`lines changed during measurement 3: ${smallAfter}, ${bigAfter}`)
    return {
      rows: [
        ratioRow('poll_1m_vs_1k_rps', '3. poll throughput, 1M waiting', bigAgg.rps, smallAgg.rps, '1k waiting', fmtRps, THROUGHPUT_TARGET, {
          value: bigAgg,
          baseline: smallAgg,
        }),
        ratioRow(
          'poll_1m_vs_1k_p99',
          '3. poll p99 latency, 1M waiting',
          bigAgg.latencyMs.p99,
          smallAgg.latencyMs.p99,
          '1k waiting',
          fmtMs,
          P99_TARGET,
          { value: bigAgg, baseline: smallAgg },
        ),
        ratioRow('poll_1k_vs_hello', '3. queued poll, 1k waiting', smallAgg.rps, helloAgg.rps, 'hello', fmtRps, HELLO_TARGET, {
          value: smallAgg,
          baseline: helloAgg,
        }),
        ratioRow('poll_1m_vs_hello', '3. queued poll, 1M waiting', bigAgg.rps, helloAgg.rps, 'hello', fmtRps, HELLO_TARGET, {
          value: bigAgg,
          baseline: helloAgg,
        }),
      ],
      runs: [helloAgg, smallAgg, bigAgg],
      warnings,
    }
  } finally {
    await edge2.stop()
    await edge.stop()
    await hello2.stop()
    await hello.stop()
  }
}
