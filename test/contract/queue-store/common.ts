// What the QueueStore contract's topics share: fresh room ids, the start time, limits, visitor ids, a shuffle.
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../../../src/core/settings.js'

let roomSeq = 0
export const newRoom = () => `c${Date.now().toString(36)}-${roomSeq++}`
export const T0 = 1_800_000_000_000

export const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
  ...ADMISSION_DEFAULTS,
  mode: 'fifo',
  totalActiveUsers: 1000,
  newUsersPerMinute: 6000,
  abandonAfterMs: 60_000,
  sessionMs: 600_000,
  ...over,
})

export const vid = (i: number) => `v${String(i).padStart(15, '0')}`

export function shuffle<T>(items: T[]): T[] {
  const a = [...items]
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j] as T, a[i] as T]
  }
  return a
}
