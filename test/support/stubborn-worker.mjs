// A worker for test/support/primary-child.ts that ignores SIGTERM and runs until killed.
process.on('SIGTERM', () => process.stdout.write(`${JSON.stringify({ event: 'worker_ignored_sigterm', pid: process.pid })}\n`))
process.stdout.write(`${JSON.stringify({ event: 'worker_ran', worker: process.env.ANTEROOM_WORKER, pid: process.pid })}\n`)
setInterval(() => {}, 1000)
