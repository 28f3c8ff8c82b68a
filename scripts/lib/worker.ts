// Runs a Worker in workerd through the Miniflare API, for the bench, the simulator and the tests: the bundle
// is the one wrangler builds for a deploy (wrangler deploy --dry-run), so they run what Cloudflare would.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { Miniflare } from 'miniflare'

const ROOT = resolve(import.meta.dirname, '../..')

/** The runtime settings of wrangler.toml, so that tests run what a deploy would. */
const WRANGLER = (() => {
  const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8')
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1]
  const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1]
  if (date === undefined || flags === undefined) throw new Error('wrangler.toml: compatibility_date or compatibility_flags not found')
  return { compatibilityDate: date, compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string) }
})()

/** Bundles a Worker entry with wrangler.toml's rules (or another config's) into outdir; answers the entry file. */
export async function buildWorker(entry: string, outdir: string, config = 'wrangler.toml'): Promise<string> {
  const wrangler = join(ROOT, 'node_modules/.bin/wrangler')
  // A clean directory: text modules carry a content hash in their names, so old builds would pile up.
  rmSync(outdir, { recursive: true, force: true })
  const out: Buffer[] = []
  const code = await new Promise<number | null>((done) => {
    const child = spawn(wrangler, ['deploy', entry, '--dry-run', '--outdir', outdir, '--config', join(ROOT, config)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1' },
    })
    child.stdout?.on('data', (d: Buffer) => out.push(d))
    child.stderr?.on('data', (d: Buffer) => out.push(d))
    child.once('exit', done)
  })
  if (code !== 0) throw new Error(`wrangler could not build ${entry}:\n${Buffer.concat(out).toString()}`)
  const name = entry.replace(/^.*\//, '').replace(/\.ts$/, '.js')
  if (!readdirSync(outdir).includes(name)) throw new Error(`wrangler built no ${name} in ${outdir}`)
  return join(outdir, name)
}

export interface WorkerInstance {
  /** http://127.0.0.1:port of workerd's own listener. */
  url: string
  mf: Miniflare
  /** A fetch into the Worker with any Host (the listener's address is only the socket). */
  request(path: string, init?: RequestInit): Promise<Response>
  /** The same for a full URL, as a test visitor drives an app (RequestTarget in runtimes.ts). */
  app: { request(url: string, init?: RequestInit): Promise<Response> }
  /** What the Worker wrote to stdout and stderr (its log), the last 64 KB. */
  output(): string
  close(): Promise<void>
}

export interface WorkerOptions {
  script: string
  vars: Record<string, string | undefined>
  /** Worker-side address of the visitors' site, e.g. http://shop.test. */
  base?: string
  /** The loopback port workerd listens on; a free one when unset. */
  port?: number
}

export async function startWorker(o: WorkerOptions): Promise<WorkerInstance> {
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536)
  }
  const bindings: Record<string, string> = {}
  for (const [k, v] of Object.entries(o.vars)) if (v !== undefined) bindings[k] = v
  const mf = new Miniflare({
    scriptPath: o.script,
    modules: true,
    // Text modules come out of wrangler named <content hash>-<file>: the admin UI's .js files among them
    // (the bundle itself is the entry's name, without a dash: entry.js, index.js).
    modulesRules: [{ type: 'Text', include: ['**/*.lua', '**/*.html', '**/*.css', '**/*-*.js'] }],
    compatibilityDate: WRANGLER.compatibilityDate,
    compatibilityFlags: WRANGLER.compatibilityFlags,
    bindings,
    durableObjects: { STORE_RELAY: 'StoreRelay' },
    host: '127.0.0.1',
    port: o.port ?? 0,
    cf: false,
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.on('data', keep)
      stderr.on('data', keep)
    },
  })
  const url = (await mf.ready).toString().replace(/\/$/, '')
  const base = o.base ?? 'http://shop.test'
  const fetchUrl = (url: string, init?: RequestInit) => mf.dispatchFetch(url, init as never) as unknown as Promise<Response>
  return {
    url,
    mf,
    request: (path, init) => fetchUrl(`${base}${path}`, init),
    app: { request: fetchUrl },
    output: () => output,
    close: () => mf.dispose(),
  }
}
