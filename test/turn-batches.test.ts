// TurnBatches (src/adapters/redis/turn-batches.ts): the claim gate's and the lane's calls go to Redis in
// batches that are sent as they fill within a turn of the event loop (16, then 32, 64, at most 128),
// and what is left at the turn's end. The send function here records what it was given: the rule under
// test is when and how calls are grouped, not Redis (the claim gate's and lane's contract suites run
// the same class against a real redis-server).
import { describe, expect, it } from 'vitest'
import { RedisClaimLane } from '../src/adapters/redis/claim-lane.js'
import { COMMAND_TIMEOUT_MS, connectRedis, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { FIRST_BATCH, MAX_BATCH, TurnBatches } from '../src/adapters/redis/turn-batches.js'
import { startRedis } from './support/redis-server.js'

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A TurnBatches whose send records each batch (its key: 'b' for inputs from 100, else 'a'). */
function recording() {
  const sent: { key: string; inputs: number[] }[] = []
  const batches = new TurnBatches<number, number>(async (inputs) => {
    sent.push({ key: (inputs[0] as number) >= 100 ? 'b' : 'a', inputs })
    return inputs.map((n) => n * 2)
  })
  return { sent, add: (key: string, n: number) => batches.add(key, n) }
}

describe('TurnBatches', () => {
  it('sends the first batch as soon as it holds FIRST_BATCH calls, within the turn', () => {
    const b = recording()
    for (let i = 0; i < FIRST_BATCH - 1; i++) void b.add('a', i)
    expect(b.sent).toHaveLength(0)
    void b.add('a', FIRST_BATCH - 1)
    // Synchronously, before the turn ends: Redis can start on these while the caller reads more.
    expect(b.sent).toHaveLength(1)
    expect(b.sent[0]?.inputs).toEqual(Array.from({ length: FIRST_BATCH }, (_, i) => i))
  })

  it('doubles the batches within a turn up to MAX_BATCH, and sends what is left at its end', async () => {
    const b = recording()
    const total = 16 + 32 + 64 + 128 + 128 + 10
    for (let i = 0; i < total; i++) void b.add('a', i)
    expect(b.sent.map((s) => s.inputs.length)).toEqual([16, 32, 64, 128, 128])
    await endOfTurn()
    expect(b.sent.map((s) => s.inputs.length)).toEqual([16, 32, 64, 128, 128, 10])
    expect(MAX_BATCH).toBe(128)
    // In the order they came, across batches.
    expect(b.sent.flatMap((s) => s.inputs)).toEqual(Array.from({ length: total }, (_, i) => i))
  })

  it('starts each turn small again', async () => {
    const b = recording()
    for (let i = 0; i < 100; i++) void b.add('a', i)
    await endOfTurn()
    expect(b.sent.map((s) => s.inputs.length)).toEqual([16, 32, 52])
    for (let i = 0; i < 20; i++) void b.add('a', i)
    expect(b.sent.map((s) => s.inputs.length)).toEqual([16, 32, 52, 16])
    await endOfTurn()
    expect(b.sent.map((s) => s.inputs.length)).toEqual([16, 32, 52, 16, 4])
  })

  it('gathers each key on its own, with its own sizes', async () => {
    const b = recording()
    for (let i = 0; i < 20; i++) {
      void b.add('a', i)
      void b.add('b', 100 + i)
    }
    await endOfTurn()
    const of = (k: string) => b.sent.filter((s) => s.key === k).map((s) => s.inputs)
    expect(of('a')).toEqual([Array.from({ length: 16 }, (_, i) => i), [16, 17, 18, 19]])
    expect(of('b')).toEqual([Array.from({ length: 16 }, (_, i) => 100 + i), [116, 117, 118, 119]])
  })

  it('answers every call with its own answer; a failed send fails its batch only', async () => {
    let calls = 0
    const batches = new TurnBatches<number, number>(async (inputs) => {
      calls++
      if (calls === 1) throw new Error('redis went away')
      return inputs.map((n) => n * 10)
    })
    const first = Array.from({ length: FIRST_BATCH }, (_, i) => batches.add('e', i))
    const rest = [batches.add('e', 100), batches.add('e', 101)]
    for (const p of first) await expect(p).rejects.toThrow('redis went away')
    expect(await Promise.all(rest)).toEqual([1000, 1010])
  })
})

describe('TurnBatches that send at the end of the turn (the lane)', () => {
  it('sends nothing within the turn, then every batch in order', async () => {
    const sent: number[][] = []
    const batches = new TurnBatches<number, number>(async (inputs) => {
      sent.push(inputs)
      return inputs
    }, false)
    const answers = Array.from({ length: 300 }, (_, i) => batches.add('e', i))
    expect(sent).toHaveLength(0)
    expect(await Promise.all(answers)).toEqual(Array.from({ length: 300 }, (_, i) => i))
    expect(sent.map((b) => b.length)).toEqual([MAX_BATCH, MAX_BATCH, 300 - 2 * MAX_BATCH])
  })

  it("keep a lane submission made early in a turn longer than Redis's command timeout from timing out", async () => {
    const server = await startRedis()
    const client = connectRedis(server.url)
    try {
      expect(await whenReady(client, 5000)).toBe(true)
      const lane = new RedisClaimLane(client, luaScripts())
      // More than a first batch's worth: sent as they filled, the first 16 would go out now.
      const submitted = Array.from({ length: FIRST_BATCH + 4 }, (_, i) =>
        lane.submit('long-turn', { id: `c${i}`, holder: `v${i}`, seats: ['A1'], items: [] }).then(
          () => 'appended',
          (err: unknown) => `failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      )
      // The rest of a turn that reads thousands of requests: longer than the command timeout.
      const until = Date.now() + COMMAND_TIMEOUT_MS + 500
      while (Date.now() < until) {}
      expect(await Promise.all(submitted)).toEqual(Array(FIRST_BATCH + 4).fill('appended'))
    } finally {
      client.disconnect()
      await server.stop()
    }
  })
})
