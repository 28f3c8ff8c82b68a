// The store fault of a sale, mid-sale: FLUSHALL, a restart of redis-server, or the Sentinel set's
// primary killed. It is recorded in `ctx.fault`, by which the visitors' polls are sorted into before
// and after (verdicts.ts).
import type { StoreFault } from '../verdicts.js'
import { sleep } from './basics.js'
import type { RunContext } from './context.js'
import type { AdmissionRecord } from './samplers.js'

/** Run ms of the fault (0 without one). */
export function faultAtMs(ctx: RunContext): number {
  const { o } = ctx
  return o.fault === undefined ? 0 : ((o.fault.atSeconds ?? o.curve.durationSeconds / 2) / o.scale) * 1000
}

/** Waits for the fault's time, reads the store's admissions once more, and causes the fault. */
export async function runFault(ctx: RunContext, record: AdmissionRecord): Promise<void> {
  const { o, stack, now, log } = ctx
  if (o.fault === undefined || stack.redis === undefined) return
  const redis = stack.redis
  const kind = o.fault.kind
  await sleep(faultAtMs(ctx) - now())
  await record.collect()
  const start = now()
  ctx.faultStarted = true
  const fault: StoreFault = { kind, start, end: start, busy: 0, reregistered: 0, browsingAfter: 0 }
  ctx.fault = fault
  let note: string | undefined
  if (kind === 'flush') await redis.flush()
  else if (kind === 'restart') await redis.restart()
  else {
    if (redis.failover === undefined) throw new Error('a failover needs the Sentinel set')
    note = await redis.failover()
  }
  fault.end = now()
  if (note !== undefined) fault.note = note
  log(`  ${(start / 1000).toFixed(1)} s: ${kind}; the store answered again after ${((fault.end - start) / 1000).toFixed(2)} s`)
}
