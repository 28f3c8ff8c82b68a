// Db on embedded PGlite (PostgreSQL compiled to WASM, in process): `npm start` runs the booking
// origin with no database installed, on the same SQL files as the PostgreSQL server.
// PGlite has one connection; its transactions run one at a time, which suits a demo.
import { PGlite } from '@electric-sql/pglite'
import type { Db, Sql } from './db.js'

export async function pgliteDb(dataDir?: string): Promise<Db> {
  const pg = await PGlite.create(dataDir === undefined ? undefined : { dataDir })
  const wrap = (run: { query: PGlite['query'] }): Sql => ({
    async query<T>(text: string, params: unknown[] = []) {
      return (await run.query<T>(text, params)).rows
    },
  })
  return {
    ...wrap(pg),
    transaction: <T>(fn: (tx: Sql) => Promise<T>) => pg.transaction((tx) => fn(wrap(tx))),
    async close() {
      await pg.close()
    },
  }
}
