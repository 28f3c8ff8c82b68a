// Percentiles for the bench and the simulator: one rule (nearest rank) for every figure they print.

/** The p-th percentile (nearest rank) of the values, in any order; NaN when there are none. */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i] as number
}

export const median = (values: ArrayLike<number>) => percentile(values, 50)
