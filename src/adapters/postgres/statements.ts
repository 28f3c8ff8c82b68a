// Loads the SQL files of ./sql by name. Each file opens with a comment naming its job and a
// `-- Params:` line; the text is sent as is, with $1... parameters.
import { readdirSync, readFileSync } from 'node:fs'

const dir = new URL('./sql/', import.meta.url)

function load(): Record<string, string> {
  const out: Record<string, string> = {}
  for (const file of readdirSync(dir)) {
    if (file.endsWith('.sql')) out[file.slice(0, -4)] = readFileSync(new URL(file, dir), 'utf8')
  }
  return out
}

const all = load()

export function statement(name: string): string {
  const text = all[name]
  if (text === undefined) throw new TypeError(`no SQL file ${name}.sql`)
  return text
}

export function statementNames(): string[] {
  return Object.keys(all).sort()
}
