// A Db that times every statement by its SQL file's name (the booking origin's metrics): the same
// statements, the same transactions, each one's duration and failure told to `observe`.
import type { Db, Sql } from './db.js'
import { statement, statementNames } from './statements.js'

export type StatementObserver = (name: string, seconds: number, ok: boolean) => void

/** SQL text → its file's name; text that is no file (a migration, a test's own) is "other". */
const names = new Map(statementNames().map((name) => [statement(name), name]))

function timed(sql: Sql, observe: StatementObserver): Sql {
  return {
    async query<T>(text: string, params?: unknown[]): Promise<T[]> {
      const name = names.get(text) ?? 'other'
      const started = performance.now()
      try {
        const rows = await sql.query<T>(text, params)
        observe(name, (performance.now() - started) / 1000, true)
        return rows
      } catch (err) {
        observe(name, (performance.now() - started) / 1000, false)
        throw err
      }
    },
  }
}

export function meteredDb(db: Db, observe: StatementObserver): Db {
  const outside = timed(db, observe)
  return {
    query: outside.query,
    transaction: (fn) => db.transaction((tx) => fn(timed(tx, observe))),
    close: () => db.close(),
  }
}
