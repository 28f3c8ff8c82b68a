// ClaimGate on Redis: one EVALSHA a call (lua/gate-*.lua; claims arriving together share one), on the
// event's keys (keys.ts gateKeys).
// The same rule as the memory gate (../memory/claim-gate.ts); test/contract/claim-gate.ts runs both.
import type { ClaimGate, ClaimInput, GateClaim, GateUnit, ReconcileResult, StockCounts, StockSnapshot } from '../../ports/claim-gate.js'
import type { RedisClient } from './connect.js'
import { gateKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { storeCall } from './store-call.js'
import { TurnBatches } from './turn-batches.js'

const unitArgs = (units: GateUnit[]): (string | number)[] => [units.length, ...units.flatMap((u) => [u.unit, u.quantity])]

/** gate-claim's reply for one claim: pass, gone (with what is left and the nearest units), or unknown. */
type ClaimReply = [string, (string | number)[]?, string[]?]

function answerOf(reply: ClaimReply): GateClaim {
  if (reply[0] === 'pass') return { kind: 'pass' }
  if (reply[0] !== 'gone') return { kind: 'unknown' }
  const flat = reply[1] ?? []
  const gone: { unit: string; left: number }[] = []
  for (let i = 0; i + 1 < flat.length; i += 2) gone.push({ unit: String(flat[i]), left: Number(flat[i + 1]) })
  return { kind: 'gone', gone, nearest: reply[2] ?? [] }
}

export class RedisClaimGate implements ClaimGate {
  private readonly claims = new TurnBatches<ClaimInput, GateClaim>((inputs) => this.send(inputs))

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: Scripts,
  ) {}

  /**
   * Claims that arrive together (same event and clock) wait for the end of the current turn of the
   * event loop and go to Redis as one EVALSHA (turn-batches.ts), as the queue store's polls do: each still costs one
   * round trip, but ioredis and Redis handle one command for a whole rush.
   */
  claim(input: ClaimInput): Promise<GateClaim> {
    return this.claims.add(`${input.event}|${input.now ?? ''}`, input)
  }

  /** One EVALSHA for claims of the same event and clock, in the order they came. */
  private async send(inputs: ClaimInput[]): Promise<GateClaim[]> {
    const { event, now } = inputs[0] as ClaimInput
    const args: (string | number)[] = [now ?? '', inputs.length]
    for (const input of inputs) {
      args.push(input.hold, input.ttlMs, ...unitArgs(input.units), input.nearest ?? 0, (input.candidates ?? []).join(' '))
    }
    const replies = (await storeCall(() => runScript(this.redis, this.scripts.gateClaim, gateKeys(event), args))) as ClaimReply[]
    return inputs.map((_, i) => answerOf(replies[i] ?? ['unknown']))
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
