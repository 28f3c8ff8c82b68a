// The Dockerfile's lines against hadolint's rules and the image's own, and what .dockerignore keeps out of the build context; checked without a Docker engine (none runs on the CI machines).
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import {
  dockerfileText,
  envPairs,
  execForm,
  final,
  finalOf,
  flags,
  type Instruction,
  ignored,
  importClosure,
  instructions,
  PINNED_NODE,
  packageJson,
  runs,
  stages,
} from './support/container-files.js'

describe('Dockerfile', () => {
  test('it is multi-stage, and every FROM is the pinned node 20 slim image or an earlier stage (DL3006, DL3007)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    const names: string[] = []
    for (const s of stages) {
      if (!names.includes(s.image)) expect(s.image).toMatch(PINNED_NODE)
      expect(s.image).not.toMatch(/:latest$/)
      if (s.name) names.push(s.name)
    }
    expect(dockerfileText).not.toMatch(/latest/i)
  })

  test('stage names are unique, and COPY --from names an earlier stage (DL3022, DL3023, DL3024)', () => {
    const names = stages.map((s) => s.name).filter((n) => n !== undefined)
    expect(new Set(names).size).toBe(names.length)
    stages.forEach((s, i) => {
      for (const ins of s.instructions.filter((x) => x.keyword === 'COPY')) {
        const from = flags(ins.args).flags.from
        if (from === undefined) continue
        const earlier = stages.slice(0, i).map((e) => e.name)
        expect(earlier, `line ${ins.line}`).toContain(from)
      }
    })
  })

  test('no ADD: COPY only, and nothing fetched from a URL (DL3020)', () => {
    expect(instructions.filter((i) => i.keyword === 'ADD')).toEqual([])
    expect(instructions.filter((i) => /https?:\/\//.test(i.args) && i.keyword !== 'HEALTHCHECK')).toEqual([])
  })

  test('dependencies are installed from the lock file, production only', () => {
    const installs = runs.filter((r) => /\bnpm (ci|install|i)\b/.test(r.args))
    expect(installs.length).toBe(1)
    const install = installs[0]?.args ?? ''
    expect(install).toMatch(/\bnpm ci\b/)
    expect(install).toContain('--omit=dev')
    // The runtime stage takes node_modules from the stage that ran the install, not from the build context.
    const copied = finalOf('COPY').filter((c) => flags(c.args).rest.split(/\s+/)[0]?.endsWith('node_modules'))
    expect(copied.length).toBe(1)
    expect(flags(copied[0]?.args ?? '').flags.from).toBeDefined()
  })

  test('the runtime stage: NODE_ENV=production, listening on every interface, on the port it EXPOSEs (DL3011)', () => {
    const env = Object.assign({}, ...finalOf('ENV').map((e) => envPairs(e.args))) as Record<string, string>
    expect(env.NODE_ENV).toBe('production')
    expect(env.ANTEROOM_HOST).toBe('0.0.0.0')
    const exposed = finalOf('EXPOSE').flatMap((e) => e.args.split(/\s+/).map((p) => Number(p.split('/')[0])))
    const port = env.ANTEROOM_PORT ? Number(env.ANTEROOM_PORT) : loadConfig({}).port
    expect(exposed).toEqual([port])
    expect(port).toBe(8080)
    for (const p of exposed) expect(Number.isInteger(p) && p > 0 && p <= 65535).toBe(true)
  })

  test('no secret is baked in: no ENV or ARG holds a secret, token, password or key', () => {
    for (const ins of instructions.filter((i) => i.keyword === 'ENV' || i.keyword === 'ARG')) {
      const names = ins.keyword === 'ENV' ? Object.keys(envPairs(ins.args)) : [ins.args.split('=')[0] ?? '']
      for (const name of names) expect(name, `line ${ins.line}`).not.toMatch(/SECRET|TOKEN|PASSWORD|KEY/i)
    }
  })

  test('it runs as the non-root node user from before CMD to the end (DL3002)', () => {
    const users = finalOf('USER')
    expect(users.at(-1)?.args).toBe('node')
    const lastUser = final.instructions.lastIndexOf(users.at(-1) as Instruction)
    const cmd = final.instructions.findIndex((i) => i.keyword === 'CMD')
    expect(lastUser).toBeLessThan(cmd)
    // Every RUN after the switch would run as node too; none may switch back.
    for (const u of instructions.filter((i) => i.keyword === 'USER')) expect(u.args).not.toMatch(/^(root|0)(:|$)/)
  })

  test('the runtime stage copies with --chown=node, and node owns the working directory it writes .anteroom/ in', () => {
    for (const c of finalOf('COPY')) expect(flags(c.args).flags.chown, `line ${c.line}`).toMatch(/^node(:node)?$/)
    const workdir = finalOf('WORKDIR').at(-1)?.args
    expect(workdir).toBeDefined()
    expect(finalOf('RUN').some((r) => new RegExp(`\\bchown (-R )?node(:node)? ${workdir}$`).test(r.args))).toBe(true)
  })

  test('it copies what runs and nothing else: the entry point and all it imports, package.json and the lock file', async () => {
    const fromContext = finalOf('COPY')
      .filter((c) => flags(c.args).flags.from === undefined)
      .flatMap((c) => flags(c.args).rest.split(/\s+/).slice(0, -1))
      .map((p) => p.replace(/^\.\/|\/$/g, ''))
    const closure = await importClosure('src/entry/node.ts')
    for (const file of closure)
      expect(
        fromContext.some((p) => file === p || file.startsWith(`${p}/`)),
        file,
      ).toBe(true)
    const files = new Set(['package.json', 'package-lock.json', 'tsconfig.json'])
    for (const p of fromContext) {
      expect(files.has(p) || [...closure].some((f) => f.startsWith(`${p}/`)), `${p} is copied but nothing runs from it`).toBe(true)
      expect(ignored(p), `.dockerignore leaves out ${p}, which the Dockerfile copies`).toBe(false)
    }
    // admin/ui is read at run time, not imported, and the migrations are SQL files.
    expect(fromContext).toEqual(expect.arrayContaining(['src', 'admin', 'package.json']))
  })

  test('CMD is the JSON form and runs what `npm start` runs, with node as the process (DL3025, DL4003)', () => {
    const cmds = finalOf('CMD')
    expect(cmds.length).toBe(1)
    const argv = execForm(cmds[0]?.args ?? '')
    expect(argv).toBeDefined()
    // npm in between would keep SIGTERM from the edge's handler.
    expect(argv?.[0]).toBe('node')
    const [tool, script] = (packageJson.scripts.start ?? '').split(' ')
    expect(tool).toBe('tsx')
    expect(argv?.slice(1)).toEqual(['--import', 'tsx', script])
    for (const e of instructions.filter((i) => i.keyword === 'ENTRYPOINT')) expect(execForm(e.args)).toBeDefined()
    expect(instructions.filter((i) => i.keyword === 'ENTRYPOINT').length).toBeLessThanOrEqual(1)
  })

  test('HEALTHCHECK: the JSON form, node fetching the liveness endpoint on loopback (DL3057)', () => {
    const checks = finalOf('HEALTHCHECK')
    expect(checks.length).toBe(1)
    const { rest } = flags(checks[0]?.args ?? '')
    expect(rest.startsWith('CMD ')).toBe(true)
    const argv = execForm(rest.slice(4).trim())
    expect(argv?.[0]).toBe('node')
    expect(argv?.join(' ')).toMatch(/fetch\('http:\/\/127\.0\.0\.1:'.*'\/_anteroom\/live'\)/)
    // Its port when ANTEROOM_PORT is unset is the one the image EXPOSEs.
    const fallback = /\|\| (\d+)\)/.exec(argv?.join(' ') ?? '')?.[1]
    expect(finalOf('EXPOSE').map((e) => e.args)).toEqual([fallback])
  })

  test('hadolint rules for RUN: no sudo, no cd, no consecutive RUNs, pipefail for pipes, pinned and cleaned apt (DL3003, DL3004, DL3059, DL4006, DL3008, DL3009, DL3015)', () => {
    for (const s of stages) {
      let shellHasPipefail = false
      s.instructions.forEach((ins, i) => {
        if (ins.keyword === 'SHELL') shellHasPipefail = (execForm(ins.args) ?? []).join(' ').includes('pipefail')
        if (ins.keyword !== 'RUN') return
        const where = `line ${ins.line}`
        expect(ins.args, where).not.toMatch(/(^|[;&|]\s*)sudo\b/)
        expect(ins.args, where).not.toMatch(/(^|[;&|]\s*)cd\s/)
        expect(s.instructions[i - 1]?.keyword, `${where}: fold consecutive RUNs into one`).not.toBe('RUN')
        if (/[^|]\|[^|]/.test(ins.args)) expect(shellHasPipefail, `${where}: a pipe needs SHELL with -o pipefail`).toBe(true)
        if (/\bapt-get\b.*\binstall\b/.test(ins.args)) {
          expect(ins.args, where).toContain('--no-install-recommends')
          const packages = ins.args
            .split(/\binstall\b/)[1]
            ?.split(/&&|;/)[0]
            ?.split(/\s+/)
            .filter((w) => w !== '' && !w.startsWith('-'))
          for (const p of packages ?? []) expect(p, `${where}: pin ${p}=<version>`).toMatch(/=/)
          expect(ins.args, `${where}: remove /var/lib/apt/lists in the same RUN`).toMatch(/rm -rf \/var\/lib\/apt\/lists/)
        }
      })
    }
  })

  test('WORKDIR is absolute and set before any relative COPY; a COPY of several sources names a directory (DL3000, DL3021, DL3045)', () => {
    for (const s of stages) {
      let workdir = false
      for (const ins of s.instructions) {
        if (ins.keyword === 'WORKDIR') {
          expect(ins.args.startsWith('/'), `line ${ins.line}`).toBe(true)
          workdir = true
        }
        if (ins.keyword !== 'COPY') continue
        const words = flags(ins.args).rest.split(/\s+/)
        const dest = words.at(-1) ?? ''
        if (!dest.startsWith('/')) expect(workdir, `line ${ins.line}: relative destination before WORKDIR`).toBe(true)
        if (words.length > 2) expect(dest.endsWith('/'), `line ${ins.line}`).toBe(true)
      }
    }
    expect(instructions.filter((i) => i.keyword === 'MAINTAINER')).toEqual([])
  })
})

describe('.dockerignore', () => {
  test('keeps dependencies, history, local state and secrets out of the build context', () => {
    for (const path of ['node_modules', '.git', '.tmp', '.anteroom', '.wrangler', '.dev.vars', '.env', 'dist', 'bench/out', 'coverage'])
      expect(ignored(path), path).toBe(true)
    expect(ignored('src/entry/node.ts')).toBe(false)
    expect(ignored('admin/ui/index.html')).toBe(false)
  })
})
