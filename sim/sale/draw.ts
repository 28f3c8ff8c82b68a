// A scheduled sale's draw as the public sees it: its commitment during the pre-queue, every page of
// it after the sale, and scripts/verify-draw.mjs (the shipped independent check) run on it.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PublishedDraw } from '../verdicts.js'
import { sleep } from './basics.js'
import type { RunContext } from './context.js'

/** The draw's commitment, read halfway through the pre-queue (undefined when none was seen). */
export async function peekCommitment(ctx: RunContext): Promise<string | undefined> {
  const { scheduled, prequeueAtRun, opensAtRun, room, now, call } = ctx
  if (!scheduled) return undefined
  await sleep((prequeueAtRun + opensAtRun) / 2 - now())
  try {
    const d = await call({ cookies: new Map() }, 'GET', `/_anteroom/draw?room=${room}`)
    if (typeof d.json?.commitment === 'string') return d.json.commitment
  } catch {
    // No commitment seen: the verdict then checks the seed against the one published after.
  }
  return undefined
}

/** Every page of the published draw, joined. */
export async function publishedDraw(ctx: RunContext): Promise<PublishedDraw | undefined> {
  const { room, call } = ctx
  const pages: Record<string, unknown>[] = []
  for (let offset = 0; ; ) {
    const r = await call({ cookies: new Map() }, 'GET', `/_anteroom/draw?room=${room}&offset=${offset}&limit=1000`)
    if (r.status !== 200 || r.json === undefined) return undefined
    pages.push(r.json)
    const list = (r.json.draw as unknown[] | undefined) ?? []
    offset += list.length
    if (r.json.state !== 'drawn' || list.length === 0 || offset >= Number(r.json.entrants)) break
  }
  return { ...pages[0], draw: pages.flatMap((p) => (p.draw as PublishedDraw['draw'] | undefined) ?? []) } as PublishedDraw
}

/** scripts/verify-draw.mjs, the shipped independent check, on the draw as published (saved to a file). */
export function verifyDrawScript(d: PublishedDraw): Promise<{ ok: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'anteroom-sim-draw-'))
  const file = join(dir, 'draw.json')
  writeFileSync(file, JSON.stringify(d))
  const script = fileURLToPath(new URL('../../scripts/verify-draw.mjs', import.meta.url))
  return new Promise((done) =>
    execFile(process.execPath, [script, file], (err, _stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true })
      done({ ok: err === null, output: stderr.trim().split('\n')[0] ?? '' })
    }),
  )
}
