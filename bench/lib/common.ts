// Bench settings from the environment, the log, and number formats.
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** From the environment, all optional: see bench/run.ts. */
export const SETTINGS = {
  /** Every target is measured in two segments of this many seconds. */
  segmentSeconds: Number(process.env.BENCH_SEGMENT_SECONDS ?? 5),
  /** A segment is run in slices of this many seconds, interleaved with the other targets' (compare). */
  sliceSeconds: Number(process.env.BENCH_SLICE_SECONDS ?? 1),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 2),
  /** Run every server under `node --cpu-prof`. */
  profile: process.env.BENCH_PROFILE === '1',
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`)
}

export const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US')
export const fmtRps = (n: number) => `${fmtInt(n)} req/s`
export const fmtMs = (n: number, digits = 2) => `${n.toFixed(digits)} ms`
