// Measurement 1: a queued poll, the request every waiting visitor repeats, a different visitor's
// cookie on every request, as JSON and as the HTML queue page.
//   Baseline: a hello-world Hono app on @hono/node-server (bench/hello.ts) in its own process, sent the
//   same requests with the same cookies. Each server runs in two processes that take turns
//   (Target.alternate), the edges over the same Redis.
//   Target: JSON polls at least half the hello-world's rate; the HTML page within 10% of the JSON polls.
//   The metrics' cost (#30): the same JSON polls on edges with ANTEROOM_METRICS=off, two processes a
//   side, first in the same turns as the rest (info), then pair by pair (bench/lib/paired.ts): the
//   median of 24 pairs of adjacent turns, metrics on within 2% of off. Beside it, the same pairing of
//   the two metrics-on processes against each other: the noise floor of such a comparison here.
// The polls' Redis commands are counted here and read by measurement 4 (redis-calls.ts).
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { ACCEPT_HTML, ACCEPT_JSON, type EdgeBench, expectQueued, get, openRoom, startEdge, startServer } from '../edge.js'
import {
  type Aggregate,
  compare,
  fmtInt,
  fmtRps,
  log,
  type MonitorSample,
  monitorSample,
  onTwoProcesses,
  paired,
  type Row,
  ratioRow,
  runLoad,
  type Target,
} from '../lib.js'
import { DAY_MS, holdTheSlot, QUEUE_ROOM, queueCookies, visitorIds } from '../line.js'
import { MONITOR_SAMPLE } from './redis-calls.js'

const TARGET = { op: '>=', value: 0.5 } as const
const HTML_TARGET = { op: '>=', value: 0.9 } as const
/** The poll with metrics on against the same poll with them off: the counting costs at most 2%. */
const METRICS_TARGET = { op: '>=', value: 0.98 } as const
/** Pairs of adjacent turns for the metrics' paired comparison. */
const METRICS_PAIRS = 24
/** Visitors in line, each polling with their own cookie. */
const VISITORS = 20_000

export interface QueuedPoll {
  rows: Row[]
  /** Every run of this measurement, for the CPU note and results.json. */
  runs: Aggregate[]
  /** The JSON polls (Redis commands counted over their segments) and a MONITOR sample of sequential polls. */
  poll: Aggregate
  monitor: MonitorSample
  joinPass: { responses: number; seconds: number; statuses: Record<string, number> }
  warnings: string[]
}

export async function measureQueuedPoll(b: EdgeBench): Promise<QueuedPoll> {
  const warnings: string[] = []
  await b.redis.flushall()
  const hello = await startServer(b, 'hello', 'bench/hello.ts')
  const edge = await startEdge(b, 'edge (queue rooms)', [QUEUE_ROOM])
  // A second process of each, taking every other turn (Target.alternate in bench/lib/wrk.ts).
  const hello2 = await startServer(b, 'hello (second process)', 'bench/hello.ts')
  const edge2 = await startEdge(b, 'edge (queue rooms, second process)', [QUEUE_ROOM])
  const quiet = await startEdge(b, 'edge, metrics off', [QUEUE_ROOM], { ANTEROOM_METRICS: 'off' })
  const quiet2 = await startEdge(b, 'edge, metrics off (second process)', [QUEUE_ROOM], { ANTEROOM_METRICS: 'off' })
  try {
    await holdTheSlot(b.redis, QUEUE_ROOM.id)
    await openRoom(`${edge.url}/`)
    // The visitors with cookies, whose tokens put them ahead of the one who opened the room: arrivals
    // in µs, a ms apart, ending a second ago.
    const inLineAfterJoin = VISITORS + 1
    const now = Date.now()
    const visitors = visitorIds(VISITORS)
    const cookies = await queueCookies(
      QUEUE_ROOM.id,
      visitors,
      visitors.map((_, i) => (now - VISITORS - 1000 + i) * 1000),
      now + 30 * DAY_MS,
    )
    const pids = { edge: edge.pid, redis: b.redisServer.pid }
    const pollJson: Target = { name: 'edge poll (JSON)', url: `${edge.url}/`, headers: { accept: ACCEPT_JSON }, cookies, pids }
    // Join pass: every visitor once, so the measured requests are polls of visitors already in line.
    log(`join pass: ${fmtInt(VISITORS)} visitors join through the edge`)
    const join = await runLoad(pollJson, { amount: VISITORS })
    const inLine = async () => b.redis.zcard(roomKeys(QUEUE_ROOM.id).line)
    if ((await inLine()) !== inLineAfterJoin)
      throw new Error(`after the join pass ${await inLine()} visitors are in line, expected ${inLineAfterJoin}`)
    if (join.non2xx > 0) throw new Error(`join pass: ${join.non2xx} non-2xx responses ${JSON.stringify(join.statuses)}`)
    const sample = await expectQueued(`${edge.url}/`, cookies[VISITORS - 1] as string, inLineAfterJoin)
    if (sample.position !== VISITORS) throw new Error(`the last visitor should be at position ${VISITORS}: ${JSON.stringify(sample)}`)
    const sample2 = await expectQueued(`${edge2.url}/`, cookies[VISITORS - 1] as string, inLineAfterJoin)
    if (sample2.position !== VISITORS) throw new Error(`the second edge should agree: ${JSON.stringify(sample2)}`)

    const helloTarget = onTwoProcesses(
      { name: 'hello', url: `${hello.url}/`, headers: { accept: ACCEPT_JSON }, cookies, pids: { hello: hello.pid } },
      hello2,
    )
    const pollTarget = onTwoProcesses({ ...pollJson, countRedis: true }, edge2)
    const pollHtml = onTwoProcesses(
      { name: 'edge poll (HTML page)', url: `${edge.url}/`, headers: { accept: ACCEPT_HTML }, cookies, pids },
      edge2,
    )
    const pollQuiet = onTwoProcesses(
      {
        name: 'edge poll (JSON, metrics off)',
        url: `${quiet.url}/`,
        headers: { accept: ACCEPT_JSON },
        cookies,
        pids: { edge: quiet.pid, redis: b.redisServer.pid },
      },
      quiet2,
    )
    const m = await compare([helloTarget, pollTarget, pollHtml, pollQuiet], { redis: b.redis })
    const helloAgg = m.get(helloTarget.name) as Aggregate
    const pollAgg = m.get(pollTarget.name) as Aggregate
    const htmlAgg = m.get(pollHtml.name) as Aggregate
    const quietAgg = m.get(pollQuiet.name) as Aggregate
    // The same two, pair by pair: the median of adjacent turns' ratios resolves the few percent that
    // two segments' totals do not (bench/lib/paired.ts).
    const pair = await paired(pollTarget, pollQuiet, METRICS_PAIRS)
    const floor = await paired(
      { ...pollJson, name: 'edge poll (JSON), first process' },
      { ...pollJson, name: 'edge poll (JSON), second process', url: `${edge2.url}/`, pids: { edge: edge2.pid } },
      METRICS_PAIRS / 2,
    )
    if ((await inLine()) !== inLineAfterJoin) warnings.push('the line changed size during the poll measurement')

    log('MONITOR sample: sequential polls')
    const monitor = await monitorSample(b.redis, MONITOR_SAMPLE, async (i) => {
      await get(`${edge.url}/`, { accept: ACCEPT_JSON, cookie: cookies[i] as string })
    })
    return {
      rows: [
        ratioRow('poll_json_vs_hello', '1. queued poll, JSON', pollAgg.rps, helloAgg.rps, 'hello', fmtRps, TARGET, {
          value: pollAgg,
          baseline: helloAgg,
        }),
        ratioRow('poll_html_vs_hello', '1. queued poll, HTML page (info)', htmlAgg.rps, helloAgg.rps, 'hello', fmtRps, 'info', {
          value: htmlAgg,
          baseline: helloAgg,
        }),
        ratioRow('poll_html_vs_json', '1. queued poll, HTML page vs JSON', htmlAgg.rps, pollAgg.rps, 'JSON poll', fmtRps, HTML_TARGET, {
          value: htmlAgg,
          baseline: pollAgg,
        }),
        ratioRow(
          'poll_metrics_off_vs_hello',
          '1. queued poll, JSON, metrics off (info)',
          quietAgg.rps,
          helloAgg.rps,
          'hello',
          fmtRps,
          'info',
          {
            value: quietAgg,
            baseline: helloAgg,
          },
        ),
        ratioRow(
          'poll_metrics_on_vs_off_segments',
          '1. queued poll, JSON: metrics on (the default) vs off, in the segments above (info)',
          pollAgg.rps,
          quietAgg.rps,
          'metrics off',
          fmtRps,
          'info',
          { value: pollAgg, baseline: quietAgg },
        ),
        {
          id: 'poll_metrics_on_vs_off',
          measurement: `1. queued poll, JSON: metrics on (the default) vs off, median of ${pair.pairs} paired turns (quartiles)`,
          value: `edge CPU ${pair.cpuUs[0].toFixed(1)} µs a poll`,
          baseline: `${pair.cpuUs[1].toFixed(1)} µs (metrics off)`,
          ratio: `${pair.median.toFixed(3)} (${pair.quartiles.map((q) => q.toFixed(3)).join(', ')})`,
          target: `${METRICS_TARGET.op} ${METRICS_TARGET.value.toFixed(2)}`,
          met: pair.median >= METRICS_TARGET.value,
        },
        {
          id: 'poll_same_edge_pairs',
          measurement: `1. the same pairing, two identical edges (metrics on) against each other: the noise floor, ${floor.pairs} pairs (quartiles)`,
          value: `edge CPU ${floor.cpuUs[0].toFixed(1)} µs a poll`,
          baseline: `${floor.cpuUs[1].toFixed(1)} µs (the other process)`,
          ratio: `${floor.median.toFixed(3)} (${floor.quartiles.map((q) => q.toFixed(3)).join(', ')})`,
          target: 'info',
          met: null,
        },
      ],
      runs: [helloAgg, pollAgg, htmlAgg, quietAgg],
      poll: pollAgg,
      monitor,
      joinPass: { responses: join.responses, seconds: join.seconds, statuses: join.statuses },
      warnings,
    }
  } finally {
    await quiet2.stop()
    await quiet.stop()
    await edge2.stop()
    await edge.stop()
    await hello2.stop()
    await hello.stop()
  }
}
