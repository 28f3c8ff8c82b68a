// Applies ./migrations/*.sql in name order, each once and in its own transaction. An advisory lock
// makes concurrent starts take turns.
import { readdirSync, readFileSync } from 'node:fs'
import type { Db } from './db.js'

const dir = new URL('./migrations/', import.meta.url)
const LOCK = 7_206_133_101

export async function migrate(db: Db): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const applied: string[] = []
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK])
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())')
    const done = new Set((await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version))
    for (const file of files) {
      if (done.has(file)) continue
      for (const stmt of splitStatements(readFileSync(new URL(file, dir), 'utf8'))) await tx.query(stmt)
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file])
      applied.push(file)
    }
  })
  return applied
}

/**
 * Splits a migration on the semicolons that end its statements: comment lines are dropped, and
 * dollar-quoted bodies ($fn$ ... $fn$) are kept whole.
 */
function splitStatements(text: string): string[] {
  const body = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
  const out: string[] = []
  let current = ''
  let quote: string | undefined
  for (let i = 0; i < body.length; i++) {
    const tag = /^\$[A-Za-z_]*\$/.exec(body.slice(i))?.[0]
    if (tag !== undefined && (quote === undefined || quote === tag)) {
      quote = quote === undefined ? tag : undefined
      current += tag
      i += tag.length - 1
    } else if (body[i] === ';' && quote === undefined) {
      out.push(current)
      current = ''
    } else current += body[i]
  }
  out.push(current)
  return out.map((s) => s.trim()).filter((s) => s.length > 0)
}
