// The real PostgreSQL server from the global setup: reachable, tuned for tests (no fsync), and with
// Read Committed semantics for racing conditional updates (what a booking origin relies on).
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { until } from '../scripts/lib/until.js'

const table = `pg_server_smoke_${process.pid}`
let sql: postgres.Sql

beforeAll(async () => {
  sql = postgres(inject('postgresUrl'), { max: 12, onnotice: () => {} })
  await sql`create table ${sql(table)} (id int primary key, v text not null)`
})

afterAll(async () => {
  await sql`drop table if exists ${sql(table)}`
  await sql.end({ timeout: 5 })
})

describe('PostgreSQL test server', () => {
  it('answers queries on the anteroom database, with fsync off', async () => {
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }])
    const [db] = await sql`select current_database() as name, current_setting('server_version_num')::int as version`
    expect(db?.name).toBe('anteroom')
    expect(db?.version).toBeGreaterThanOrEqual(150000)
    expect((await sql`show fsync`)[0]?.fsync).toBe('off')
    expect((await sql`show synchronous_commit`)[0]?.synchronous_commit).toBe('off')
    expect((await sql`show max_connections`)[0]?.max_connections).toBe('200')
    expect((await sql`show transaction_isolation`)[0]?.transaction_isolation).toBe('read committed')
  })

  it('a conditional update racing another blocks, then re-checks the row: exactly one wins', async () => {
    await sql`insert into ${sql(table)} (id, v) values (1, 'free')`
    const a = await sql.reserve()
    const b = await sql.reserve()
    try {
      const [bBackend] = await b`select pg_backend_pid() as pid`
      await a`begin`
      await b`begin`
      const ra = await a`update ${sql(table)} set v = 'a' where id = 1 and v = 'free'`
      // b's identical update has to wait for a's row lock...
      const rb = b`update ${sql(table)} set v = 'b' where id = 1 and v = 'free'`.execute()
      await until('the second update to wait on the row lock', async () => {
        const [row] = await sql`select wait_event_type from pg_stat_activity where pid = ${bBackend?.pid}`
        return row?.wait_event_type === 'Lock'
      })
      // ...and once a commits, Read Committed re-evaluates its WHERE on the new row version: no match.
      await a`commit`
      const rbDone = await rb
      await b`commit`
      expect([ra.count, rbDone.count]).toEqual([1, 0])
      expect(await sql`select v from ${sql(table)} where id = 1`).toEqual([{ v: 'a' }])
    } finally {
      a.release()
      b.release()
    }
  })

  it('twenty concurrent conditional updates of one free row: the row counts add up to 1', async () => {
    await sql`insert into ${sql(table)} (id, v) values (2, 'free')`
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sql.begin((tx) => tx`update ${sql(table)} set v = ${`taker-${i}`} where id = 2 and v = 'free'`)),
    )
    expect(results.reduce((n, r) => n + r.count, 0)).toBe(1)
    const [row] = await sql`select v from ${sql(table)} where id = 2`
    expect(row?.v).toMatch(/^taker-\d+$/)
  })
})
