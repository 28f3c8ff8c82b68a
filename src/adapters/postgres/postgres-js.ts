// Db on a PostgreSQL server through the `postgres` driver. Every statement is prepared, once per
// connection, so a statement with parameters costs one round trip (Bind/Execute/Sync) after the
// first, instead of two (Parse/Describe/Flush, then Bind/Execute/Sync).
//
// Two pools, so that a transaction never shares a connection with pooled statements. The driver
// pipelines prepared statements onto busy connections, and sql.begin() sends its BEGIN down the same
// path: when the BEGIN lands behind other statements on a connection whose pipeline is then full
// (max_pipeline, 100) or whose socket reports back-pressure, the driver skips reserving that
// connection for the transaction. PostgreSQL runs the BEGIN anyway; the driver then fails the
// transaction with UNSAFE_TRANSACTION and leaves the pooled connection inside the open transaction,
// where the next statements of other requests run and are never committed (acknowledged writes lost
// when the connection closes). On a pool that runs only transactions, a connection is idle whenever
// the driver hands it a BEGIN, so the BEGIN is always the first thing sent and the connection is
// always reserved (test/postgres-prepared.test.ts).
//
// Connection failures (the server stopped or restarting) surface as ERR_DB_UNAVAILABLE, a 503 with
// Retry-After (./unavailable.ts).
import postgres from 'postgres'
import type { Db, Sql } from './db.js'
import { unavailable } from './unavailable.js'

type Params = Parameters<postgres.Sql['unsafe']>[1]

export interface PostgresDbOptions {
  /** Connections in all: the statement pool's and the transaction pool's (default 10). */
  max?: number
  /** Of those, the connections that run transactions (default a third of max, at least 1). */
  transactionMax?: number
}

export function postgresDb(url: string, options: PostgresDbOptions = {}): Db {
  const max = options.max ?? 10
  const transactionMax = options.transactionMax ?? Math.max(1, Math.floor(max / 3))
  const pool = (size: number) =>
    postgres(url, {
      max: size,
      onnotice: () => {},
      // A session-wide statement_timeout backs up the per-transaction ones, also for single statements.
      connection: { statement_timeout: 10_000 },
      // While the server is away, every request waiting for a connection fails at once (ERR_DB_UNAVAILABLE)
      // instead of one per growing back-off delay; a new connection is tried as soon as a request needs one.
      backoff: () => 0,
      connect_timeout: 5,
    })
  const statements = pool(Math.max(1, max - transactionMax))
  const transactions = pool(transactionMax)
  const wrap = (run: postgres.Sql | postgres.TransactionSql): Sql => ({
    async query<T>(text: string, params: unknown[] = []) {
      try {
        return (await run.unsafe(text, params as Params, { prepare: true })) as unknown as T[]
      } catch (err) {
        throw unavailable(err)
      }
    },
  })
  return {
    ...wrap(statements),
    async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
      try {
        return (await transactions.begin((tx) => fn(wrap(tx)))) as T
      } catch (err) {
        throw unavailable(err)
      }
    },
    async close() {
      await Promise.all([statements.end({ timeout: 5 }), transactions.end({ timeout: 5 })])
    },
  }
}
