// The Lua scripts, run by SHA with a fallback to EVAL only when Redis answers NOSCRIPT.
// The sources are handed in by the runtime: Node reads ./lua from disk (lua-files.ts), the Worker
// bundles the same files as text (worker/bundled.ts).
import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'

export interface Script {
  name: string
  source: string
  sha: string
  numKeys: number
}

/** Every script the adapters run, by the file it lives in; the number in the name is its key count. */
export const SCRIPT_FILES = {
  poll: 'poll-7.lua',
  renew: 'renew-2.lua',
  end: 'end-2.lua',
  endAll: 'end-all-2.lua',
  settingsCas: 'settings-cas-1.lua',
  sample: 'sample-5.lua',
  stats: 'stats-4.lua',
} as const

export type Scripts = { readonly [K in keyof typeof SCRIPT_FILES]: Script }

/** Builds the scripts from their sources, given as file name → Lua text. */
export function defineScripts(sources: Readonly<Record<string, string>>): Scripts {
  const out: Partial<Record<keyof typeof SCRIPT_FILES, Script>> = {}
  for (const [key, file] of Object.entries(SCRIPT_FILES) as [keyof typeof SCRIPT_FILES, string][]) {
    const source = sources[file]
    if (typeof source !== 'string' || source.length === 0) throw new TypeError(`Lua script ${file} is missing`)
    out[key] = {
      name: file,
      source,
      sha: createHash('sha1').update(source).digest('hex'),
      numKeys: Number(/-(\d+)\.lua$/.exec(file)?.[1]),
    }
  }
  return out as Scripts
}

export type ScriptRedis = Pick<Redis | Cluster, 'evalsha' | 'eval'>

export async function runScript(redis: ScriptRedis, script: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
  if (keys.length !== script.numKeys) throw new TypeError(`${script.name} takes ${script.numKeys} keys, got ${keys.length}`)
  try {
    return await redis.evalsha(script.sha, script.numKeys, ...keys, ...args)
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return redis.eval(script.source, script.numKeys, ...keys, ...args)
    }
    throw err
  }
}
