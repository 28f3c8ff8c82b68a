// The statement pool of postgresDb under a rush, on the real PostgreSQL server: a client it retires
// or closes with statements waiting leaves no connection open, and a long queue is not taken for a
// dead server. The driver (postgres 3.4.9) reconnects a connection that ends while statements wait
// in its own queue, after its end() has resolved, and that connection then stays open, idle, for good:
// a rush that retired a client leaked its connections that way, which hung the festival test in CI
// (see src/adapters/postgres/postgres-js.ts). Each pool here names its connections
// (application_name), so pg_stat_activity shows whether any outlived it.
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { isAnteroomError } from '../src/core/errors.js'

let admin: postgres.Sql
let seq = 0

beforeAll(() => {
  admin = postgres(inject('postgresUrl'), { max: 1, onnotice: () => {} })
})
afterAll(async () => {
  await admin?.end({ timeout: 5 })
})

/** A pool whose connections carry a name of their own. */
function pool(options: Parameters<typeof postgresDb>[1]) {
  const name = `pool_test_${process.pid}_${seq++}`
  const u = new URL(inject('postgresUrl'))
  u.searchParams.set('application_name', name)
  return { name, db: postgresDb(u.toString(), options) }
}

async function connections(name: string): Promise<number> {
  const [r] = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${name}`
  return r?.n ?? 0
}

/**
 * The connections named name once they are all gone, or 0 if they are; waits up to 15 s for them
 * to go (a backend leaves pg_stat_activity a moment after its client closed), then answers what is left.
 */
async function left(name: string): Promise<number> {
  const giveUp = Date.now() + 15_000
  for (;;) {
    const n = await connections(name)
    if (n === 0 || Date.now() > giveUp) return n
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** What a statement came to: its rows' value, or the code of its error. */
const outcome = (p: Promise<{ v: number }[]>) =>
  p.then(
    (rows) => `ok ${rows[0]?.v}`,
    (err: unknown) => (isAnteroomError(err) ? err.code : `other ${String(err)}`),
  )

describe('the statement pool in a rush', () => {
  it('a client retired with statements waiting leaves no connection open, and the waiting ones run on its successor', async () => {
    // One statement connection, no statement behind the running one. The first statement outlasts
    // noAnswerMs, so its client is retired while the other 60 wait behind it. (noAnswerMs also
    // covers the successor's connecting, so it is not set very short.)
    const { name, db } = pool({ max: 2, transactionMax: 1, maxPipeline: 0, noAnswerMs: 1500 })
    const slow = outcome(db.query('SELECT 0 AS v, pg_sleep($1)', [3]))
    const rest = Array.from({ length: 60 }, (_, i) => outcome(db.query('SELECT $1::int AS v, pg_sleep(0.01)', [i + 1])))
    const first = await slow
    const others = await Promise.all(rest)
    await db.close()
    expect(await left(name)).toBe(0)
    expect(first).toBe('ERR_DB_UNAVAILABLE')
    // Waiting behind the slow one for longer than noAnswerMs is not a dead server: each was answered.
    expect(others).toEqual(Array.from({ length: 60 }, (_, i) => `ok ${i + 1}`))
  })

  it('a pool closed while statements wait leaves no connection open, and every statement is answered', async () => {
    // Two statement connections with the driver's pipeline of 100: 2,000 statements, most of them
    // waiting when close() is called.
    const { name, db } = pool({ max: 3, transactionMax: 1 })
    const all = Array.from({ length: 2000 }, (_, i) => outcome(db.query('SELECT $1::int AS v, pg_sleep(0.0005)', [i])))
    await all[0]
    await db.close()
    const outcomes = await Promise.all(all)
    expect(await left(name)).toBe(0)
    const counts = outcomes.reduce<Record<string, number>>((m, o) => {
      const k = o.startsWith('ok') ? 'ok' : o
      m[k] = (m[k] ?? 0) + 1
      return m
    }, {})
    // Those handed to the driver ran; those still waiting failed as the database closed.
    expect(Object.keys(counts).sort()).toEqual(['ERR_DB_UNAVAILABLE', 'ok'])
    expect(counts.ok).toBeGreaterThan(0)
  })
})
