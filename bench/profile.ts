// Summarises V8 CPU profiles (.cpuprofile) of the edge: where its time goes, by area and by function.
// Record them with `BENCH_PROFILE=1 npm run bench` (the edge children run under `node --cpu-prof`),
// then: `npx tsx bench/profile.ts [file.cpuprofile ...]` (default: the main-thread profile of every
// server in bench/out/profiles; the other thread in each process is tsx's module loader).
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { ROOT } from './lib.js'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

function where(url: string): string {
  if (url === '') return '(native/V8)'
  const path = url.replace(/^file:\/\//, '')
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)
  if (pkg) return pkg[1] as string
  if (path.startsWith('node:')) return path.split('/').slice(0, 2).join('/')
  return relative(ROOT, path)
}

function area(node: ProfileNode): string {
  const name = node.callFrame.functionName
  if (name.startsWith('(')) return name
  const w = where(node.callFrame.url)
  if (w.startsWith('src/')) return w
  if (w.startsWith('node:')) return 'node:internal'
  return w
}

function key(node: ProfileNode): string {
  const f = node.callFrame
  return `${f.functionName || '(anonymous)'}  ${where(f.url)}:${f.lineNumber + 1}`
}

function summarise(file: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  const areas = new Map<string, number>()
  // Each sample charged to the innermost function of ours (src/) on its stack, with everything it
  // called (node:crypto, ioredis, JSON, ...); a sample with none of ours to the innermost package, or
  // else to what Node itself was doing (the HTTP server, streams, timers, the garbage collector).
  const ours = new Map<string, number>()
  let all = 0
  let idle = 0
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0
    const node = byId.get(id)
    if (node === undefined) return
    all += dt
    if (node.callFrame.functionName === '(idle)') idle += dt
    self.set(key(node), (self.get(key(node)) ?? 0) + dt)
    areas.set(area(node), (areas.get(area(node)) ?? 0) + dt)
    let charged: string | undefined
    let pkg: string | undefined
    for (let n: ProfileNode | undefined = node; n !== undefined && charged === undefined; n = byId.get(parent.get(n.id) ?? -1)) {
      const w = where(n.callFrame.url)
      if (w.startsWith('src/')) charged = `${n.callFrame.functionName || '(anonymous)'}  ${w}`
      else if (pkg === undefined && n.callFrame.url !== '' && !w.startsWith('node:')) pkg = `(${w})`
    }
    const fallback = node.callFrame.functionName.startsWith('(') ? node.callFrame.functionName : 'node:internal and native'
    const to = charged ?? pkg ?? fallback
    ours.set(to, (ours.get(to) ?? 0) + dt)
    const seen = new Set<string>()
    for (let n: ProfileNode | undefined = node; n !== undefined; n = byId.get(parent.get(n.id) ?? -1)) {
      const k = key(n)
      if (seen.has(k)) continue
      seen.add(k)
      total.set(k, (total.get(k) ?? 0) + dt)
    }
  })
  const busy = all - idle
  const pct = (v: number) => `${((100 * v) / busy).toFixed(1).padStart(5)}%`
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .filter(([k]) => !k.startsWith('(idle)') && !k.startsWith('(root)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
  process.stdout.write(
    `\n${relative(ROOT, file)}: ${(all / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (percentages of busy time)\n`,
  )
  process.stdout.write('\nself time by area:\n')
  for (const [k, v] of top(areas, 20)) process.stdout.write(`  ${pct(v)}  ${k}\n`)
  process.stdout.write('\nself time by function:\n')
  for (const [k, v] of top(self, 30)) process.stdout.write(`  ${pct(v)}  ${k}\n`)
  process.stdout.write('\ntime by the innermost function of ours (src/) with what it called, else by package, else Node:\n')
  for (const [k, v] of top(ours, 30)) process.stdout.write(`  ${pct(v)}  ${k}\n`)
  process.stdout.write('\ninclusive time by function (src/ only):\n')
  for (const [k, v] of top(new Map([...total].filter(([k]) => k.includes(' src/'))), 25)) process.stdout.write(`  ${pct(v)}  ${k}\n`)
}

const dir = join(ROOT, 'bench', 'out', 'profiles')
const files = process.argv.slice(2)
if (files.length === 0) {
  try {
    // Default names: CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread.
    for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' }))
      if (/\.\d+\.0\.\d+\.cpuprofile$/.test(f)) files.push(join(dir, f))
  } catch {
    // No profiles yet.
  }
}
if (files.length === 0) {
  process.stderr.write('no profiles: run `BENCH_PROFILE=1 npm run bench` first, or pass .cpuprofile files\n')
  process.exit(1)
}
for (const f of files) summarise(f)
