// Bench plumbing shared by the measurements (bench/measure/), one module a job in bench/lib/: settings
// and formats (common.ts), the table row (rows.ts), child servers started and stopped by pid
// (children.ts), load runs with wrk (wrk.ts), paired comparisons with latency percentiles and the CPU
// of the generator and the servers (paired.ts), /proc CPU accounting (cpu.ts), and Redis command
// counting from INFO commandstats and MONITOR (redis-stats.ts).
export * from './lib/children.js'
export * from './lib/common.js'
export * from './lib/cpu.js'
export * from './lib/paired.js'
export * from './lib/redis-stats.js'
export * from './lib/rows.js'
export * from './lib/wrk.js'
