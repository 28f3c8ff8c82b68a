// ClaimGate on Redis: one EVALSHA a call (lua/gate-*.lua; claims arriving together share one), on the
// event's keys (keys.ts gateKeys).
// The same rule as the memory gate (../memory/claim-gate.ts); test/contract/claim-gate.ts runs both.
import type { ClaimGate, ClaimInput, GateClaim, GateUnit, ReconcileResult, StockCounts, StockSnapshot } from '../../ports/claim-gate.js'
import type { RedisClient } from './connect.js'
import { gateKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { storeCall } from './store-call.js'

const unitArgs = (units: GateUnit[]): (string | number)[] => [units.length, ...units.flatMap((u) => [u.unit, u.quantity])]

/** Most claims in one call. */
const MAX_BATCH = 200

/** Runs fn after the current turn of the event loop: setImmediate on Node, a zero timer elsewhere. */
const nextTurn: (fn: () => void) => void = typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0)

interface Batch {
  event: string
  now: number | undefined
  claims: { input: ClaimInput; resolve: (answer: GateClaim) => void; reject: (err: unknown) => void }[]
}

function answerOf(reply: [string, (string | number)[]?, string[]?]): GateClaim {
  if (reply[0] === 'pass') return { kind: 'pass' }
  if (reply[0] !== 'gone') return { kind: 'unknown' }
  const flat = reply[1] ?? []
  const gone: { unit: string; left: number }[] = []
  for (let i = 0; i + 1 < flat.length; i += 2) gone.push({ unit: String(flat[i]), left: Number(flat[i + 1]) })
  return { kind: 'gone', gone, nearest: reply[2] ?? [] }
}

export class RedisClaimGate implements ClaimGate {
  private readonly batches = new Map<string, Batch>()

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: Scripts,
  ) {}

  /**
   * Claims that arrive together (same event and clock) wait for the end of the current turn of the
   * event loop and go to Redis as one EVALSHA, as the queue store's polls do: each still costs one
   * round trip, but ioredis and Redis handle one command for a whole rush.
   */
  claim(input: ClaimInput): Promise<GateClaim> {
    const key = `${input.event}|${input.now ?? ''}`
    let batch = this.batches.get(key)
    if (batch === undefined || batch.claims.length >= MAX_BATCH) {
      batch = { event: input.event, now: input.now, claims: [] }
      this.batches.set(key, batch)
      const flushing = batch
      nextTurn(() => {
        if (this.batches.get(key) === flushing) this.batches.delete(key)
        void this.send(flushing)
      })
    }
    return new Promise((resolve, reject) => batch.claims.push({ input, resolve, reject }))
  }

  private async send(batch: Batch): Promise<void> {
    const args: (string | number)[] = [batch.now ?? '', batch.claims.length]
    for (const { input } of batch.claims) {
      args.push(input.hold, input.ttlMs, ...unitArgs(input.units), input.nearest ?? 0, (input.candidates ?? []).join(' '))
    }
    let replies: [string, (string | number)[]?, string[]?][]
    try {
      replies = (await storeCall(() => runScript(this.redis, this.scripts.gateClaim, gateKeys(batch.event), args))) as typeof replies
    } catch (err) {
      for (const c of batch.claims) c.reject(err)
      return
    }
    for (const [i, c] of batch.claims.entries()) c.resolve(answerOf(replies[i] ?? ['unknown']))
  }

  async release(event: string, hold: string, now?: number): Promise<void> {
    await storeCall(() => runScript(this.redis, this.scripts.gateRelease, gateKeys(event), [now ?? '', hold]))
  }

  async sold(event: string, hold: string, units: GateUnit[], now?: number): Promise<void> {
    await storeCall(() => runScript(this.redis, this.scripts.gateSold, gateKeys(event), [now ?? '', hold, ...unitArgs(units)]))
  }

  async reconcile(event: string, snapshot: StockSnapshot, graceMs: number, now?: number): Promise<ReconcileResult> {
    const args: (string | number)[] = [now ?? '', graceMs, snapshot.units.length]
    for (const u of snapshot.units) args.push(u.unit, u.capacity, u.sold)
    args.push(snapshot.holds.length)
    for (const h of snapshot.holds) args.push(h.id, h.expiresAt, ...unitArgs(h.units))
    const [repairs, rebuilt] = (await storeCall(() => runScript(this.redis, this.scripts.gateReconcile, gateKeys(event), args))) as [
      number,
      number,
    ]
    return { repairs, rebuilt: rebuilt === 1 }
  }

  async counts(event: string, now?: number): Promise<StockCounts | undefined> {
    const reply = (await storeCall(() => runScript(this.redis, this.scripts.gateCounts, gateKeys(event), [now ?? '']))) as number[]
    if (reply.length < 5) return undefined
    const [free, held, sold, reconciledAt, repairs] = reply as [number, number, number, number, number]
    return { free, held, sold, reconciledAt, repairs }
  }
}
