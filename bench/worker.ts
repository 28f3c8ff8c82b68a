// `npm run bench:worker`: measurement 8 alone (bench/measure/worker.ts), the edge Worker in workerd
// against a hello-world Worker; also the last part of `npm run bench`. Results: bench/out/worker.json.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './lib.js'
import { measureWorker } from './measure/worker.js'

const OUT = join(ROOT, 'bench/out')
const { rows, results } = await measureWorker()
mkdirSync(OUT, { recursive: true })
writeFileSync(join(OUT, 'worker.json'), JSON.stringify({ rows, results }, null, 2))
console.table(rows.map((r) => ({ measurement: r.measurement, value: r.value, baseline: r.baseline, ratio: r.ratio, target: r.target })))
