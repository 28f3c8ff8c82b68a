// The Lua scripts, run by SHA with a fallback to EVAL only when Redis answers NOSCRIPT. Their sources
// come from lua/index.generated.ts (npm run build:lua), which Node and the Worker both import.
import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { LUA_SOURCES } from './lua/index.generated.js'

export interface Script {
  name: string
  source: string
  sha: string
  numKeys: number
}

export type ScriptName = keyof typeof LUA_SOURCES
export type Scripts = { readonly [K in ScriptName]: Script }

/** Every script in ./lua, with its SHA1, built once. The number in a file's name is its key count. */
export function luaScripts(): Scripts {
  cached ??= Object.fromEntries(
    Object.entries(LUA_SOURCES).map(([name, { file, source }]) => [
      name,
      { name: file, source, sha: createHash('sha1').update(source).digest('hex'), numKeys: Number(/-(\d+)\.lua$/.exec(file)?.[1]) },
    ]),
  ) as Scripts
  return cached
}
let cached: Scripts | undefined

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
