// The Lua scripts for Node: read once from ./lua next to this file.
import { readFileSync } from 'node:fs'
import { defineScripts, SCRIPT_FILES, type Scripts } from './scripts.js'

let cached: Scripts | undefined

export function luaFromFiles(): Scripts {
  cached ??= defineScripts(
    Object.fromEntries(Object.values(SCRIPT_FILES).map((file) => [file, readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8')])),
  )
  return cached
}
