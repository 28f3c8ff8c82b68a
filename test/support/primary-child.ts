// A primary of src/entry/processes.ts in a process of its own, for test/processes.test.ts: forks
// PRIMARY_PROCESSES workers of PRIMARY_EXEC (a script relative to this folder), restarting them after
// 20 ms and killing one that has not stopped 300 ms after SIGTERM, and writes its log as JSON lines;
// exits with runPrimary's code.
import { jsonLog } from '../../src/core/log.js'
import { runPrimary } from '../../src/entry/processes.js'

const log = jsonLog({ write: (line) => process.stdout.write(line) })
const exec = new URL(process.env.PRIMARY_EXEC ?? 'exiting-worker.mjs', import.meta.url).pathname
process.exit(await runPrimary({ processes: Number(process.env.PRIMARY_PROCESSES ?? 2), exec, log, restartDelayMs: 20, stopGraceMs: 300 }))
