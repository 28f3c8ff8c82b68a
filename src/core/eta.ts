// The wait a visitor is shown: from the admissions of the last minute, the same for the queue page,
// the status JSON and the admin's "back of the line".

/** ETA from the admissions of the last minute; unknown until something was admitted. */
export function etaSeconds(position: number, admittedLastMinute: number): number | null {
  if (admittedLastMinute <= 0) return null
  return Math.ceil(position / (admittedLastMinute / 60))
}
