// AnalyticsStore on Redis: one EVALSHA of analytics-5.lua a record, on the room's keys; a report's
// range is read with one pipeline of HGETALLs, one an hour (keys.ts roomKeys().analytics).
import type { Cluster, Redis } from 'ioredis'
import {
  ANALYTICS_HOUR_MS,
  ANALYTICS_KEEP_MS,
  type AnalyticsInput,
  type AnalyticsRecord,
  type AnalyticsStore,
  MINUTE_MS,
  type MinuteSample,
  type MinuteState,
  minutesIn,
  type SampledStock,
  type WaitCounts,
} from '../../ports/analytics-store.js'
import { noRefusals, REFUSAL_REASONS, type RefusalReason } from '../../ports/defence-store.js'
import { roomKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'

/** How the state text writes the stock: one letter. */
const STOCK_CODES: Record<SampledStock, string> = { available: 'a', all_held: 'h', sold_out: 's', unknown: 'u', none: 'n' }
const STOCK_BY_CODE = new Map(Object.entries(STOCK_CODES).map(([stock, code]) => [code, stock as SampledStock]))
const MINUTES_PER_HOUR = ANALYTICS_HOUR_MS / MINUTE_MS

const boundText = (bound: number) => (bound === Number.POSITIVE_INFINITY ? '+Inf' : String(bound))
const boundOf = (text: string) => (text === '+Inf' ? Number.POSITIVE_INFINITY : Number(text))

/** "waiting,active,admitted,abandoned,stock[,reason=n...]" as analytics-5.lua writes it. */
function parseState(text: string): MinuteState | null {
  const [waiting, active, admitted, abandoned, code, ...rest] = text.split(',')
  const stock = STOCK_BY_CODE.get(code ?? '')
  if (stock === undefined) return null
  const refused = noRefusals()
  for (const pair of rest) {
    const eq = pair.indexOf('=')
    const reason = pair.slice(0, eq) as RefusalReason
    if (REFUSAL_REASONS.includes(reason)) refused[reason] = Number(pair.slice(eq + 1))
  }
  return { waiting: Number(waiting), active: Number(active), admitted: Number(admitted), abandoned: Number(abandoned), refused, stock }
}

/** "bound:count,..." → [bound, count] pairs, as stored (ascending). */
function parseWait(text: string | undefined): WaitCounts {
  if (text === undefined || text === '') return []
  return text.split(',').map((pair) => {
    const colon = pair.indexOf(':')
    return [boundOf(pair.slice(0, colon)), Number(pair.slice(colon + 1))]
  })
}

export class RedisAnalyticsStore implements AnalyticsStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  async record(input: AnalyticsInput): Promise<AnalyticsRecord> {
    const k = roomKeys(input.room)
    const args: (string | number)[] = [input.now ?? '', STOCK_CODES[input.stock], ANALYTICS_KEEP_MS]
    for (const [bound, n] of input.queueWait) if (n > 0) args.push(boundText(bound), n)
    const [sampled, minute, now] = (await storeCall(() =>
      runScript(this.redis, this.scripts.analytics, [k.line, k.active, k.stats, k.refused, k.analytics], args),
    )) as [number, number, number]
    return { sampled: sampled === 1, minute, now }
  }

  async minutes(room: string, from: number, to: number): Promise<MinuteSample[]> {
    const [first, last] = minutesIn(from, to)
    if (last < first) return []
    const prefix = roomKeys(room).analytics
    const firstHour = Math.floor(first / MINUTES_PER_HOUR)
    const lastHour = Math.floor(last / MINUTES_PER_HOUR)
    // Every hour's hash carries the room's hash tag: one pipeline, one slot, also on a Cluster.
    const pipeline = this.redis.pipeline()
    for (let hour = firstHour; hour <= lastHour; hour++) pipeline.hgetall(`${prefix}${hour}`)
    const hours = (await storeCall(async () => replies(await pipeline.exec()))) as Record<string, string>[]
    const out: MinuteSample[] = []
    hours.forEach((fields, i) => {
      const hour = firstHour + i
      for (let m = 0; m < MINUTES_PER_HOUR; m++) {
        const minute = hour * MINUTES_PER_HOUR + m
        if (minute < first || minute > last) continue
        const state = fields[m]
        const wait = fields[`w${m}`]
        if (state === undefined && wait === undefined) continue
        out.push({ minute, state: state === undefined ? null : parseState(state), queueWait: parseWait(wait) })
      }
    })
    return out
  }
}
