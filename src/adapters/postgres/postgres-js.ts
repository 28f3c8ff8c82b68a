// Db on a PostgreSQL server through the `postgres` driver (a pool of connections).
import postgres from 'postgres'
import type { Db, Sql } from './db.js'

type Params = Parameters<postgres.Sql['unsafe']>[1]

export function postgresDb(url: string, options: { max?: number } = {}): Db {
  // A session-wide statement_timeout backs up the per-transaction ones, also for single statements.
  const client = postgres(url, { max: options.max ?? 10, onnotice: () => {}, connection: { statement_timeout: 10_000 } })
  const wrap = (run: postgres.Sql | postgres.TransactionSql): Sql => ({
    async query<T>(text: string, params: unknown[] = []) {
      // Not prepared: with { prepare: true } the driver failed under heavy concurrency here
      // (UNSAFE_TRANSACTION on pooled connections), so each statement costs a parse round trip.
      return (await run.unsafe(text, params as Params)) as unknown as T[]
    },
  })
  return {
    ...wrap(client),
    async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
      return (await client.begin((tx) => fn(wrap(tx)))) as T
    },
    async close() {
      await client.end({ timeout: 5 })
    },
  }
}
