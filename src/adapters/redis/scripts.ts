// Loads the Lua scripts and runs them by SHA, falling back to EVAL only when Redis answers NOSCRIPT.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Cluster, Redis } from 'ioredis'

export interface Script {
  name: string
  source: string
  sha: string
  numKeys: number
}

function load(file: string): Script {
  const source = readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8')
  const match = /-(\d+)\.lua$/.exec(file)
  return {
    name: file,
    source,
    sha: createHash('sha1').update(source).digest('hex'),
    numKeys: Number(match?.[1]),
  }
}

export const SCRIPTS = {
  poll: load('poll-7.lua'),
  renew: load('renew-2.lua'),
  end: load('end-2.lua'),
  endAll: load('end-all-2.lua'),
  settingsCas: load('settings-cas-1.lua'),
  sample: load('sample-5.lua'),
  stats: load('stats-4.lua'),
} as const

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
