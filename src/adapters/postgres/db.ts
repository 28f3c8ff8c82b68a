// The small SQL surface the booking store needs, so that one set of SQL files runs on a
// PostgreSQL server (the `postgres` driver) and on embedded PGlite alike.

export interface Sql {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
}

export interface Db extends Sql {
  /** Runs fn in one transaction: commit when it resolves, roll back when it throws. */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** The SQLSTATE of a database error, if it has one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
