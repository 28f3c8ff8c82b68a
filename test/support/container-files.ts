// The container files as the container tests read them: the Dockerfile parsed as BuildKit reads it, compose.yaml's services and environment, .dockerignore's patterns, and the files the entry point imports.
import { readFile } from 'node:fs/promises'
import { join, posix, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'

export const ROOT = resolve(import.meta.dirname, '../..')
export const dockerfileText = await readFile(join(ROOT, 'Dockerfile'), 'utf8')
export const composeText = await readFile(join(ROOT, 'compose.yaml'), 'utf8')
export const dockerignoreText = await readFile(join(ROOT, '.dockerignore'), 'utf8')
export const packageJson = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }

// ---- The Dockerfile, parsed as BuildKit reads it ----

export interface Instruction {
  keyword: string
  /** What follows the keyword, continuation lines joined. */
  args: string
  line: number
}

export interface Stage {
  image: string
  name: string | undefined
  instructions: Instruction[]
}

/** Instructions in order: continuation lines joined, comments (also inside a continued line) and blank lines dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  let start = 0
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd()
    if (line.trim() === '' || line.trimStart().startsWith('#')) return
    if (pending === '') start = i + 1
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      return
    }
    const whole = pending + line
    pending = ''
    const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(whole)
    if (m) out.push({ keyword: (m[1] ?? '').toUpperCase(), args: (m[2] ?? '').trim(), line: start })
  })
  if (pending !== '') throw new Error('the Dockerfile ends inside a continued line')
  return out
}

export function splitStages(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = []
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const words = flags(ins.args).rest.split(/\s+/)
      const as = words.findIndex((w) => w.toUpperCase() === 'AS')
      stages.push({ image: words[0] ?? '', name: as > 0 ? words[as + 1] : undefined, instructions: [] })
    } else if (stages.length === 0) {
      if (ins.keyword !== 'ARG') throw new Error(`line ${ins.line}: ${ins.keyword} before the first FROM`)
    } else {
      stages.at(-1)?.instructions.push(ins)
    }
  }
  return stages
}

/** The leading --name=value flags of an instruction, and the rest. */
export function flags(args: string): { flags: Record<string, string>; rest: string } {
  const found: Record<string, string> = {}
  let rest = args
  for (let m = /^--([\w-]+)(?:=(\S*))?\s+/.exec(rest); m; m = /^--([\w-]+)(?:=(\S*))?\s+/.exec(rest)) {
    found[m[1] ?? ''] = m[2] ?? 'true'
    rest = rest.slice(m[0].length)
  }
  return { flags: found, rest: rest.trim() }
}

/** An exec-form (JSON array) argument list, or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined
  const parsed: unknown = JSON.parse(args)
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`not a JSON list of strings: ${args}`)
  return parsed
}

/** ENV key=value pairs (double-quoted values allowed). */
export function envPairs(args: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const value = m[2] ?? ''
    out[m[1] ?? ''] = value.startsWith('"') ? (JSON.parse(value) as string) : value
  }
  return out
}

export const instructions = parseDockerfile(dockerfileText)
export const stages = splitStages(instructions)
export const final = stages.at(-1) as Stage
export const finalOf = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword)
export const runs = instructions.filter((i) => i.keyword === 'RUN')
/** The image's base: the official node image, a 20.x release pinned to its patch, Debian 12 slim. */
export const PINNED_NODE = /^node:20\.\d+\.\d+-bookworm-slim$/

// ---- compose.yaml ----

export type EnvEntries = Map<string, string | undefined>

export interface Service {
  image?: string
  build?: string | { context?: string; dockerfile?: string }
  command?: string[] | string
  environment?: string[] | Record<string, string | null>
  ports?: (string | number)[]
  expose?: (string | number)[]
  healthcheck?: { test?: string[] | string }
  depends_on?: Record<string, { condition?: string }> | string[]
  init?: boolean
}

export const compose = parseYaml(composeText) as { services: Record<string, Service> }
export const service = (name: string) => compose.services[name] as Service

/** A service's environment; undefined marks a variable passed through from the shell (or .env), unset when it is not there. */
export function environment(s: Service): EnvEntries {
  const out: EnvEntries = new Map()
  if (Array.isArray(s.environment)) {
    for (const entry of s.environment) {
      const at = entry.indexOf('=')
      out.set(at < 0 ? entry : entry.slice(0, at), at < 0 ? undefined : entry.slice(at + 1))
    }
  } else {
    for (const [k, v] of Object.entries(s.environment ?? {})) out.set(k, v === null ? undefined : String(v))
  }
  return out
}

/** Compose's interpolation of ${VAR}, ${VAR:-default}, ${VAR-default} and $$, against the given shell. */
export function interpolate(value: string, shell: Record<string, string | undefined>): string {
  return value.replace(/\$\$|\$\{(\w+)(?:(:?-)([^}]*))?\}|\$(\w+)/g, (m, name, op, fallback, bare) => {
    if (m === '$$') return '$'
    const set = shell[(name ?? bare) as string]
    if (op === ':-') return set ? set : fallback
    if (op === '-') return set ?? fallback
    return set ?? ''
  })
}

/** What the edge's container would see with nothing set in the shell: defaults applied, pass-throughs unset. */
export function resolvedEnv(s: Service): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of environment(s)) if (v !== undefined) out[k] = interpolate(v, {})
  return out
}

/** A published port's container side ("8080:8080", "127.0.0.1:8080:8080/tcp", 8080). */
export function containerPort(published: string | number): number {
  return Number(String(published).split('/')[0]?.split(':').at(-1))
}

/** The port a service's server listens on inside its container: an explicit --port, else the image's default. */
export function listensOn(name: string): number {
  const s = service(name)
  const command = Array.isArray(s.command) ? s.command : String(s.command ?? '').split(/\s+/)
  const at = command.indexOf('--port')
  if (at >= 0) return Number(command[at + 1])
  const defaults: Record<string, number> = { redis: 6379, postgres: 5432 }
  const image = (s.image ?? '').split(':')[0] ?? ''
  if (defaults[image] === undefined) throw new Error(`no known default port for ${s.image}`)
  return defaults[image]
}

// ---- .dockerignore ----

export const ignorePatterns = dockerignoreText
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'))

/** Whether the build context leaves out a path (relative, with slashes): patterns are anchored at the context's root. */
export function ignored(path: string): boolean {
  if (ignorePatterns.some((p) => p.startsWith('!'))) throw new Error('the .dockerignore matcher here does not handle ! exceptions')
  const regexes = ignorePatterns.map((p) => {
    const body = p
      .replace(/^\/+|\/+$/g, '')
      .split('**')
      .map((part) =>
        part
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]'),
      )
      .join('.*')
    return new RegExp(`^${body}(/.*)?$`)
  })
  return regexes.some((r) => r.test(path))
}

// ---- What the entry point imports ----

/** The repository files src/entry/node.ts loads, following relative imports (`.js` names the `.ts` source). */
export async function importClosure(entry: string): Promise<Set<string>> {
  const seen = new Set<string>()
  const queue = [entry]
  while (queue.length > 0) {
    const file = queue.pop() as string
    if (seen.has(file)) continue
    seen.add(file)
    const text = await readFile(join(ROOT, file), 'utf8')
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = posix.normalize(posix.join(posix.dirname(file), (m[1] ?? '').replace(/\.js$/, '.ts')))
      queue.push(target)
    }
  }
  return seen
}
