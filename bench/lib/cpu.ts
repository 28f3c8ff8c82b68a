// CPU accounting from Linux /proc: the processes this one started, the pid listening on a port, and
// their CPU seconds.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/**
 * The processes `root` started, and theirs (Linux /proc), by pid; by default this process's. Read from
 * each thread's children list (/proc/<pid>/task/<tid>/children): a server's workers, PostgreSQL's backends.
 */
export function descendants(root = process.pid): number[] {
  const out: number[] = []
  const todo = [root]
  while (todo.length > 0) {
    const parent = todo.pop() as number
    let tasks: string[] = []
    try {
      tasks = readdirSync(`/proc/${parent}/task`)
    } catch {
      continue // Gone meanwhile, or not Linux.
    }
    for (const tid of tasks) {
      let text = ''
      try {
        text = readFileSync(`/proc/${parent}/task/${tid}/children`, 'utf8')
      } catch {
        continue
      }
      for (const c of text.split(' ')) {
        if (c.trim() === '') continue
        out.push(Number(c))
        todo.push(Number(c))
      }
    }
  }
  return out
}

/**
 * The pid of the process this one started (or one of theirs) that listens on a loopback TCP port:
 * for servers started through a library (workerd under Miniflare), whose pid it does not give.
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = new Set<string>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      // local address "ADDR:PORT" in hex, state 0A = LISTEN, inode in field 10.
      if (f.length > 9 && f[3] === '0A' && Number.parseInt((f[1] ?? '').split(':')[1] ?? '', 16) === port) inodes.add(f[9] as string)
    }
  }
  for (const pid of descendants()) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const link = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (link && inodes.has(link[1] as string)) return pid
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined
}

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every common kernel). */
const TICKS_PER_SECOND = 100

/** CPU seconds (user + system) of one process, or undefined. */
function cpuOf(pid: number): number | undefined {
  try {
    // Fields after the command name, which is in parentheses and may contain spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    // Not Linux, or the process is gone: no figure.
    return undefined
  }
}

/**
 * CPU seconds (user + system) so far of the given processes, each with the processes it started (an
 * origin of several worker processes counts as one server).
 */
export function cpuTimes(pids: Record<string, number>): Map<string, number> {
  const out = new Map<string, number>()
  for (const [label, pid] of Object.entries(pids)) {
    const own = cpuOf(pid)
    if (own === undefined) continue
    out.set(
      label,
      descendants(pid).reduce((sum, p) => sum + (cpuOf(p) ?? 0), own),
    )
  }
  return out
}
